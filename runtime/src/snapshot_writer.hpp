// SnapshotWriter: one background thread that writes a finished payload into a snapshot region
// (contract/snapshot_file.hpp: the older slot, checksum last) while training goes on; the
// caller hands the payload over and gets it back (for reuse) from wait(). One write in flight:
// start() requires the previous one collected. The write holds the snapshot fence
// (snapshot_fence.hpp) while it runs. One owner thread; the destructor waits and joins.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "contract/snapshot_file.hpp"

namespace ddp::detail {

class SnapshotWriter {
 public:
  struct Done {
    uint64_t step = 0;
    snapshot::WriteResult result;  // error 0: the slot is complete
    double seconds = 0;            // checksum + copy, on the thread
    std::string payload;           // handed back
  };

  SnapshotWriter() = default;
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  // A write started and not yet collected by wait().
  bool pending() const { return pending_; }

  // Writes `payload` as `step` into the region open on `fd` on the thread; returns at once.
  // Precondition: !pending().
  void start(int fd, uint64_t step, std::string payload);

  // Blocks until the write in flight is done and returns it; nullopt when none is pending.
  std::optional<Done> wait();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::thread thread_;  // started by the first start()
  bool stop_ = false;
  bool queued_ = false;    // a job for the thread
  bool finished_ = false;  // the thread's result is in done_
  bool pending_ = false;   // started, not collected (owner thread only)
  int fd_ = -1;
  Done done_;
};

}  // namespace ddp::detail
