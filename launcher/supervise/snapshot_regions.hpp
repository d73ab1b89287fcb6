// The job's snapshot regions (docs/snapshots.md): one empty private file per local rank in
// /dev/shm (DDP_LAUNCH_SNAPSHOT_DIR overrides it), created on first use, the same path for
// every attempt, round and standby of that rank, removed when this object goes (normal exit,
// failure, a stop signal: the agents own one for the whole job). The worker sizes the file
// itself. A launcher killed by SIGKILL leaves its files; the next launcher sweeps them.
// Single-threaded (the agent's thread); blocks only for file creation.
#pragma once

#include <map>
#include <string>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::supervise {

inline constexpr const char* kSnapshotDirEnvVar = "DDP_LAUNCH_SNAPSHOT_DIR";
inline constexpr const char* kSnapshotFilePrefix = "ddp-launch-snapshot";

class SnapshotRegions {
 public:
  // Sweeps the files of dead launchers from the folder; creates nothing yet.
  explicit SnapshotRegions(const cli::Environment& env);
  SnapshotRegions(const SnapshotRegions&) = delete;
  SnapshotRegions& operator=(const SnapshotRegions&) = delete;
  ~SnapshotRegions();  // unlinks every file it created

  // The region of `local_rank` ("" when the folder cannot hold one: said once, the workers
  // then run without snapshots).
  std::string path_for(int local_rank);
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::map<int, std::string> paths_;
  bool unavailable_ = false;
};

}  // namespace ddp::launch::supervise
