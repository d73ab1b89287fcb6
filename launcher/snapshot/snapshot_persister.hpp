// The snapshot persister: a thread that writes local rank 0's newest complete in-memory
// snapshot to --snapshot-persist-dir (the file and what to skip: persist_plan.hpp) every
// --snapshot-persist-interval seconds and when asked (a failure, the end, a stop), so the
// workers never wait for the disk. request() never blocks; finish() waits for what was
// asked (bounded by one write) and stops the thread. SnapshotRegions owns it and finishes it
// before removing the regions. Events go to the borrowed EventLog (its write() is
// thread-safe); console lines of the end and of a stop are printed by finish()'s caller.
#pragma once

#include <memory>
#include <string>

#include "launcher/report/event_log.hpp"
#include "launcher/snapshot/persist_plan.hpp"

namespace ddp::launch::snapshot {

class SnapshotPersister {
 public:
  // Starts the thread. `events` (may be null) must outlive this object.
  SnapshotPersister(SnapshotPersistConfig config, report::EventLog* events);
  ~SnapshotPersister();  // finish()
  SnapshotPersister(const SnapshotPersister&) = delete;
  SnapshotPersister& operator=(const SnapshotPersister&) = delete;

  // The region to read (local rank 0's); until then there is nothing to persist.
  void set_source(const std::string& region_path);
  // Persist the newest snapshot now (after the one in progress, if any). Returns at once.
  void request(PersistReason why);
  // Waits for the requested persists, stops the thread, prints their console lines.
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::launch::snapshot
