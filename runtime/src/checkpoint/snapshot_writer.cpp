// snapshot_writer.hpp: a thread waiting on a condition variable for one job at a time.
#include "runtime/src/checkpoint/snapshot_writer.hpp"

#include <chrono>
#include <exception>
#include <utility>

#include "runtime/src/checkpoint/snapshot_fence.hpp"

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

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

void SnapshotWriter::start(int fd, uint64_t step, std::string payload, Serializer serialize) {
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  snapshot_fence::hold();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fd_ = fd;
    done_ = Done{};
    done_.step = step;
    done_.payload = std::move(payload);
    serialize_ = std::move(serialize);
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
  serialize_ = nullptr;  // what it held (a staged archive) goes here, not on the thread
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
    if (serialize_) {
      try {
        serialize_(job.payload);
      } catch (const std::exception& e) {
        job.failure = e.what();
      }
      job.serialize_seconds = seconds_since(start);
    }
    if (job.failure.empty())
      job.result = snapshot::write_snapshot(fd_, job.step, job.payload.data(), job.payload.size());
    job.seconds = seconds_since(start);
    snapshot_fence::release();
    lock.lock();
    finished_ = true;
    cv_.notify_all();
  }
}

}  // namespace ddp::detail
