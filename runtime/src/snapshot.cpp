// ddp::Snapshot: a checkpoint archive (checkpoint_archive.hpp) whose tensors are staged into
// host buffers on the caller's thread (archive_staging.hpp: a memory copy, or on a GPU copies
// into pinned memory on a side stream), then serialised and written into the launcher's region
// by a SnapshotWriter thread (contract/snapshot_file.hpp: older slot, checksum last). An
// archive that cannot be staged is serialised on the caller's thread as before.
// Snapshot::restore is in snapshot_restore.cpp.
#include "ddp/snapshot.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include "archive_staging.hpp"
#include "checkpoint_archive.hpp"
#include "contract/snapshot_file.hpp"
#include "ddp/process_group.hpp"
#include "snapshot_fence.hpp"
#include "snapshot_writer.hpp"

namespace ddp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void serialize_into(torch::serialize::OutputArchive& archive, std::string& buffer) {
  archive.save_to([&](const void* data, size_t size) -> size_t {
    buffer.append(static_cast<const char*>(data), size);
    return size;
  });
}

// The tensors a forward writes in place: the model's buffers (running statistics, DDP's
// broadcast of them).
std::unordered_set<const c10::TensorImpl*> forward_written(const torch::nn::Module& model) {
  std::unordered_set<const c10::TensorImpl*> written;
  for (const auto& buffer : model.buffers()) written.insert(buffer.unsafeGetTensorImpl());
  return written;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// A core that none of this machine's workers' compute threads uses (LOCAL_WORLD_SIZE workers
// with torch's intra-op threads each, over this process's CPU affinity).
bool spare_core() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int cores = ::sched_getaffinity(0, sizeof set, &set) == 0
                        ? CPU_COUNT(&set)
                        : static_cast<int>(std::thread::hardware_concurrency());
  const char* local = std::getenv("LOCAL_WORLD_SIZE");
  const long workers = local && *local ? std::max(1L, std::strtol(local, nullptr, 10)) : 1;
  return cores > workers * at::get_num_threads();
}

// The state lives on a device: the caller's thread would wait for every tensor's synchronous
// copy, so staging always pays there.
bool on_device(const torch::nn::Module& model) {
  for (const auto& p : model.parameters())
    if (!p.is_cpu()) return true;
  for (const auto& b : model.buffers())
    if (!b.is_cpu()) return true;
  return false;
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

}  // namespace

Snapshot::Snapshot() {
  const char* path = std::getenv(snapshot::kEnvVar);
  if (!path || !*path) return;
  path_ = path;
  fd_ = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd_ < 0)
    std::cerr << "ddp::Snapshot: cannot open the snapshot region " << path_ << ": " << std::strerror(errno)
              << "; snapshots are off" << std::endl;
}

Snapshot::~Snapshot() {
  collect();
  staging_.reset();
  if (fd_ >= 0) ::close(fd_);
}

bool Snapshot::save(int64_t step, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                    const CheckpointExtra& extra) {
  if (fd_ < 0) return false;
  if (!collect()) return false;  // the previous write failed: warned, off
  judge_cpu_staging();
  const auto start = Clock::now();
  // The buffer is kept between saves: no fresh pages to fault in each time.
  std::string buffer = std::move(buffer_);
  buffer.clear();
  if (!staging_) staging_ = std::make_unique<detail::ArchiveStaging>();
  auto archive = std::make_shared<torch::serialize::OutputArchive>(detail::checkpoint_archive(model, optimizer, extra));
  // Without a fence in backward (no DDP model) nothing holds the optimizer step back until the
  // write landed: the current stream then waits for the device copies too.
  // On a CPU staging pays only with a core to spare (where the workers' threads fill every core
  // it adds a copy and takes a core from training) and while its writes land before training
  // waits for them (docs/snapshots.md, "Written in the background").
  const bool device = on_device(model);
  bool staged = false;
  if (staging_ok_ && (device || (cpu_staging_pays_ && spare_core()))) {
    try {
      staged = staging_->stage(*archive, forward_written(model), !detail::snapshot_fence::backward_fenced());
    } catch (const c10::Error& e) {  // e.g. no pinned memory left: staging off, this archive rebuilt
      std::cerr << "ddp::Snapshot: staging the snapshot's tensors failed: " << first_line(e.what_without_backtrace())
                << "; snapshots serialise on the training thread from now on" << std::endl;
      staging_ok_ = false;
      staging_->wait_copies();
      archive = std::make_shared<torch::serialize::OutputArchive>(detail::checkpoint_archive(model, optimizer, extra));
    }
  }
  detail::SnapshotWriter::Serializer serialize;
  if (staged) {
    serialize = [archive, staging = staging_.get()](std::string& out) {
      staging->wait_copies();
      serialize_into(*archive, out);
    };
  } else {
    staging_->wait_copies();
    serialize_into(*archive, buffer);
  }
  serialize_s_ = seconds_since(start);
  serialize_total_s_ += serialize_s_;
  staged_bytes_ = staging_->bytes();
  cpu_staged_saves_ = staged && !device ? cpu_staged_saves_ + 1 : 0;
  fence_mark_ = detail::snapshot_fence::waited_seconds();
  if (!writer_) writer_ = std::make_unique<detail::SnapshotWriter>();
  writer_->start(fd_, static_cast<uint64_t>(step), std::move(buffer), std::move(serialize));
  return true;
}

bool Snapshot::wait() { return collect() && fd_ >= 0; }

// Called with the previous write collected. Staging took that write's serialisation off the
// training thread (the background serialise time less the staging time); if training then
// waited longer for the write (at the fence and in collect()), serialising on the training
// thread costs less: it does from now on. The first staged write (fresh buffers) is not judged.
void Snapshot::judge_cpu_staging() {
  if (cpu_staged_saves_ < 2) return;
  const double waited = detail::snapshot_fence::waited_seconds() - fence_mark_ + wait_s_;
  if (waited > background_serialize_s_ - serialize_s_) cpu_staging_pays_ = false;
}

bool Snapshot::collect() {
  const auto start = Clock::now();
  auto done = writer_ ? writer_->wait() : std::nullopt;
  wait_s_ = seconds_since(start);
  waits_s_ += wait_s_;
  if (!done) return true;
  copy_s_ = done->seconds;
  background_serialize_s_ = done->serialize_seconds;
  buffer_ = std::move(done->payload);  // reused by the next save
  bytes_ = buffer_.size();
  if (!done->failure.empty()) {
    std::cerr << "ddp::Snapshot: serialising the snapshot of step " << done->step
              << " failed: " << first_line(done->failure)
              << "; snapshots are off for this worker, disk checkpoints go on as before" << std::endl;
    close_region();
    return false;
  }
  if (done->result.error == 0) return true;
  turn_off(buffer_.size(), done->result.bytes_needed, done->result.error);
  return false;
}

double Snapshot::total_wait_seconds() const { return waits_s_ + detail::snapshot_fence::waited_seconds(); }

void Snapshot::turn_off(uint64_t bytes, uint64_t bytes_needed, int error) {
  std::cerr << "ddp::Snapshot: cannot hold a snapshot of " << bytes << " bytes in " << directory_of(path_)
            << " (it needs " << bytes_needed << " bytes for the region): " << std::strerror(error)
            << "; snapshots are off for this worker, disk checkpoints go on as before (give " << directory_of(path_)
            << " more room, e.g. docker run --shm-size)" << std::endl;
  close_region();
}

void Snapshot::close_region() {
  ::close(fd_);
  fd_ = -1;
  buffer_ = std::string();  // the memory back
  staging_.reset();
}

}  // namespace ddp
