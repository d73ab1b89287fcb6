// ddp::Snapshot: a checkpoint archive (checkpoint_archive.hpp). State on the CPU is written as a
// tensor table (tensor_table.hpp) on the caller's thread: each tensor copied once, straight into
// the launcher's region (contract/snapshot_file.hpp: older slot, checksum of the head last).
// State on a device is staged into host buffers on the caller's thread (archive_staging.hpp:
// copies into pinned memory on a side stream), then serialised and written by a SnapshotWriter
// thread; an archive that fits neither is serialised on the caller's thread and written by it.
// Snapshot::restore is in snapshot_restore.cpp.
#include "ddp/snapshot.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "runtime/src/checkpoint/archive_staging.hpp"
#include "runtime/src/checkpoint/checkpoint_archive.hpp"
#include "contract/snapshot_file.hpp"
#include "ddp/process_group.hpp"
#include "runtime/src/checkpoint/snapshot_fence.hpp"
#include "runtime/src/checkpoint/snapshot_writer.hpp"
#include "runtime/src/checkpoint/stream_copy.hpp"
#include "runtime/src/checkpoint/tensor_table.hpp"
#include "runtime/src/process/progress_feed.hpp"

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
  unmap();
  staging_.reset();
  if (fd_ >= 0) ::close(fd_);
}

bool Snapshot::save(int64_t step, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                    const CheckpointExtra& extra) {
  if (fd_ < 0) return false;
  if (!collect()) return false;            // the previous write failed: warned, off
  const detail::feed::SavingClock saving;  // what the training thread waits for, the async write not
  const auto start = Clock::now();
  const bool device = on_device(model);
  if (!device) {  // one copy of each tensor, into the region: cheaper than any staging
    auto archive = detail::checkpoint_archive(model, optimizer, extra);
    if (auto table = detail::tensor_table_of(archive)) return write_table(step, *table, start);
  }
  // The buffer is kept between saves: no fresh pages to fault in each time.
  std::string buffer = std::move(buffer_);
  buffer.clear();
  if (!staging_) staging_ = std::make_unique<detail::ArchiveStaging>();
  auto archive = std::make_shared<torch::serialize::OutputArchive>(detail::checkpoint_archive(model, optimizer, extra));
  // Without a fence in backward (no DDP model) nothing holds the optimizer step back until the
  // write landed: the current stream then waits for the device copies too.
  bool staged = false;
  if (staging_ok_ && device) {
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
  in_place_ = false;
  if (!writer_) writer_ = std::make_unique<detail::SnapshotWriter>();
  writer_->start(fd_, static_cast<uint64_t>(step), std::move(buffer), std::move(serialize));
  return true;
}

bool Snapshot::write_table(int64_t step, const detail::TensorTable& table,
                           std::chrono::steady_clock::time_point start) {
  std::vector<snapshot::Part> parts;
  parts.reserve(table.tensors.size() + 1);
  parts.push_back({0, table.head.data(), table.head.size()});
  for (size_t i = 0; i < table.tensors.size(); ++i)
    parts.push_back({table.offsets[i], table.tensors[i].data_ptr(), table.tensors[i].nbytes()});
  const auto copy_start = Clock::now();
  // Copies into a shared mapping of the region: a memcpy at memory speed (a pwrite into tmpfs
  // goes page by page, at a third of it). The space is reserved before any copy: no SIGBUS.
  const snapshot::WriteResult r =
      snapshot::write_snapshot_parts(fd_, static_cast<uint64_t>(step), parts.data(), parts.size(), table.length,
                                     table.head.size(), [this](const void* data, size_t bytes, uint64_t at) {
                                       char* region = mapped(at + bytes);
                                       if (region) detail::stream_copy(region + at, data, bytes);
                                       return region != nullptr;
                                     });
  copy_s_ = seconds_since(copy_start);
  serialize_s_ = seconds_since(start);
  serialize_total_s_ += serialize_s_;
  background_serialize_s_ = 0;
  bytes_ = table.length;
  staged_bytes_ = 0;
  in_place_ = true;
  if (r.error == 0) return true;
  turn_off(table.length, r.bytes_needed, r.error);
  return false;
}

char* Snapshot::mapped(uint64_t bytes) {
  if (bytes <= map_size_) return static_cast<char*>(map_);
  unmap();
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) < bytes) {
    errno = EIO;
    return nullptr;
  }
  // Populated: the whole region's pages mapped in one pass (the first save after a restart
  // copied 7-9 ms instead of 1-2 into each slot, faulting page by page; 5-6 ms once this way).
  void* addr =
      ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd_, 0);
  if (addr == MAP_FAILED) return nullptr;
  map_ = addr;
  map_size_ = static_cast<uint64_t>(st.st_size);
  return static_cast<char*>(map_);
}

void Snapshot::unmap() {
  if (map_) ::munmap(map_, static_cast<size_t>(map_size_));
  map_ = nullptr;
  map_size_ = 0;
}

bool Snapshot::wait() { return collect() && fd_ >= 0; }

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
  unmap();
  ::close(fd_);
  fd_ = -1;
  buffer_ = std::string();  // the memory back
  staging_.reset();
}

}  // namespace ddp
