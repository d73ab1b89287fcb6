// ddp::Snapshot: a checkpoint archive (checkpoint_archive.hpp) serialised into host memory on
// the caller's thread, then written into the launcher's region by a SnapshotWriter thread
// (contract/snapshot_file.hpp: older slot, checksum last). Snapshot::restore is in
// snapshot_restore.cpp.
#include "ddp/snapshot.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "checkpoint_archive.hpp"
#include "contract/snapshot_file.hpp"
#include "ddp/process_group.hpp"
#include "snapshot_fence.hpp"
#include "snapshot_writer.hpp"

namespace ddp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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
  if (fd_ >= 0) ::close(fd_);
}

bool Snapshot::save(int64_t step, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                    const CheckpointExtra& extra) {
  if (fd_ < 0) return false;
  const auto start = Clock::now();
  // Serialised while the previous write may still run: it has its own buffer. Both buffers
  // are kept between saves: no fresh pages to fault in each time.
  std::string buffer = std::move(buffer_);
  buffer.clear();
  detail::checkpoint_archive(model, optimizer, extra).save_to([&](const void* data, size_t size) -> size_t {
    buffer.append(static_cast<const char*>(data), size);
    return size;
  });
  serialize_s_ = seconds_since(start);
  serialize_total_s_ += serialize_s_;
  if (!collect()) return false;  // the previous write failed: warned, off
  bytes_ = buffer.size();
  if (!writer_) writer_ = std::make_unique<detail::SnapshotWriter>();
  writer_->start(fd_, static_cast<uint64_t>(step), std::move(buffer));
  return true;
}

bool Snapshot::wait() { return collect() && fd_ >= 0; }

bool Snapshot::collect() {
  const auto start = Clock::now();
  auto done = writer_ ? writer_->wait() : std::nullopt;
  wait_s_ = seconds_since(start);
  waits_s_ += wait_s_;
  if (!done) return true;
  copy_s_ = done->seconds;
  buffer_ = std::move(done->payload);  // reused by the next save
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
  ::close(fd_);
  fd_ = -1;
  buffer_ = std::string();  // the memory back
}

}  // namespace ddp
