// The job's snapshot regions (docs/snapshots.md): one empty private file per local rank in
// /dev/shm (DDP_LAUNCH_SNAPSHOT_DIR overrides it), created on first use, the same path for
// every attempt, round and standby of that rank, removed when this object goes (normal exit,
// failure, a stop signal: the agents own one for the whole job). The worker sizes the file
// itself. A launcher killed by SIGKILL leaves its files; the next launcher sweeps them.
// With --snapshot-persist-dir it owns the SnapshotPersister that writes local rank 0's
// snapshot to disk, and finishes it (the persists asked for) before removing the files.
// Single-threaded (the agent's thread; the persister has its own); blocks only for file
// creation, and in the destructor for a requested persist.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "launcher/cli/environment.hpp"
#include "launcher/snapshot/snapshot_persister.hpp"

namespace ddp::launch::snapshot {

inline constexpr const char* kSnapshotDirEnvVar = "DDP_LAUNCH_SNAPSHOT_DIR";
inline constexpr const char* kSnapshotFilePrefix = "ddp-launch-snapshot";

class SnapshotRegions {
 public:
  // Sweeps the files of dead launchers from the folder; creates nothing yet. persist: local
  // rank 0's snapshot is persisted to persist.dir (nothing if it is ""); its events go to
  // `events` (may be null), which must outlive this object.
  explicit SnapshotRegions(const cli::Environment& env, const SnapshotPersistConfig& persist = {},
                           report::EventLog* events = nullptr);
  SnapshotRegions(const SnapshotRegions&) = delete;
  SnapshotRegions& operator=(const SnapshotRegions&) = delete;
  ~SnapshotRegions();  // finishes the persister, then unlinks every file it created

  // Asks the persister (if any) to write the newest snapshot now; returns at once. The end
  // and a stop are waited for by the destructor.
  void persist(PersistReason why);

  // The region of `local_rank` ("" when the folder cannot hold one: said once, the workers
  // then run without snapshots).
  std::string path_for(int local_rank);
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<int, std::string> paths_;
  bool unavailable_ = false;
  std::unique_ptr<SnapshotPersister> persister_;  // null: not persisting
};

}  // namespace ddp::launch::snapshot
