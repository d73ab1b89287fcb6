// ddp::Snapshot: a checkpoint archive (checkpoint_archive.hpp) serialised into host memory,
// then written into the launcher's region with contract/snapshot_file.hpp (older slot,
// checksum last). Snapshot::restore is in snapshot_restore.cpp.
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
  if (fd_ >= 0) ::close(fd_);
}

bool Snapshot::save(int64_t step, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                    const CheckpointExtra& extra) {
  if (fd_ < 0) return false;
  const auto start = Clock::now();
  std::string& buffer = buffer_;  // kept between saves: no fresh pages to fault in each time
  buffer.clear();
  detail::checkpoint_archive(model, optimizer, extra).save_to([&](const void* data, size_t size) -> size_t {
    buffer.append(static_cast<const char*>(data), size);
    return size;
  });
  serialize_s_ = seconds_since(start);
  const auto copy_start = Clock::now();
  const snapshot::WriteResult r =
      snapshot::write_snapshot(fd_, static_cast<uint64_t>(step), buffer.data(), buffer.size());
  copy_s_ = seconds_since(copy_start);
  bytes_ = buffer.size();
  if (r.error != 0) {
    std::cerr << "ddp::Snapshot: cannot hold a snapshot of " << buffer.size() << " bytes in " << directory_of(path_)
              << " (it needs " << r.bytes_needed << " bytes for the region): " << std::strerror(r.error)
              << "; snapshots are off for this worker, disk checkpoints go on as before (give " << directory_of(path_)
              << " more room, e.g. docker run --shm-size)" << std::endl;
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  return true;
}

}  // namespace ddp
