// snapshot_writer.hpp: a thread waiting on a condition variable for one job at a time.
#include "snapshot_writer.hpp"

#include <chrono>
#include <utility>

#include "snapshot_fence.hpp"

namespace ddp::detail {

SnapshotWriter::~SnapshotWriter() {
  wait();
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void SnapshotWriter::start(int fd, uint64_t step, std::string payload) {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  snapshot_fence::hold();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fd_ = fd;
    done_ = Done{};
    done_.step = step;
    done_.payload = std::move(payload);
    queued_ = true;
    finished_ = false;
  }
  pending_ = true;
  cv_.notify_all();
}

std::optional<SnapshotWriter::Done> SnapshotWriter::wait() {
  if (!pending_) return std::nullopt;
  std::unique_lock<std::mutex> lock(mutex_);
  cv_.wait(lock, [&] { return finished_; });
  finished_ = false;
  pending_ = false;
  return std::move(done_);
}

void SnapshotWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || queued_; });
    if (!queued_) return;  // stop_ with nothing queued
    queued_ = false;
    Done& job = done_;  // the owner touches done_ only after finished_
    lock.unlock();
    const auto start = std::chrono::steady_clock::now();
    job.result = snapshot::write_snapshot(fd_, job.step, job.payload.data(), job.payload.size());
    job.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    snapshot_fence::release();
    lock.lock();
    finished_ = true;
    cv_.notify_all();
  }
}

}  // namespace ddp::detail
