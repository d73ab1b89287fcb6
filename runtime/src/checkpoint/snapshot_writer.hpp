// SnapshotWriter: one background thread that serialises a payload (when the caller gives it a
// serialiser) and writes it into a snapshot region (contract/snapshot_file.hpp: the older slot,
// checksum last) while training goes on; the caller hands the payload buffer over and gets it
// back (for reuse) from wait(). One write in flight: start() requires the previous one
// collected. The write holds the snapshot fence (snapshot_fence.hpp) while it runs. One owner
// thread; the destructor waits and joins.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
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
    std::string failure;           // the serialiser threw this: nothing was written
    double serialize_seconds = 0;  // the serialiser, on the thread
    double seconds = 0;            // serialiser + checksum + copy, on the thread
    std::string payload;           // handed back
  };

  SnapshotWriter() = default;
  ~SnapshotWriter();
  SnapshotWriter(const SnapshotWriter&) = delete;
  SnapshotWriter& operator=(const SnapshotWriter&) = delete;

  // A write started and not yet collected by wait().
  bool pending() const { return pending_; }

  // On the thread: `serialize(payload)` first when given (it appends to the empty buffer it
  // gets; what it throws fails the write), then writes `payload` as `step` into the region open
  // on `fd`. Returns at once. Precondition: !pending().
  using Serializer = std::function<void(std::string&)>;
  void start(int fd, uint64_t step, std::string payload, Serializer serialize = nullptr);

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
  Serializer serialize_;  // the job's; released by wait() on the owner's thread
  Done done_;
};

}  // namespace ddp::detail
