// How one attempt of a node's worker group ended: succeeded, failed (with its root cause),
// interrupted by a signal, or stopped by a check; every worker's outcome. Plain data.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "launcher/report/failure_report.hpp"

namespace ddp::launch::report {

struct AttemptResult {
  enum class Kind { kSucceeded, kFailed, kInterrupted, kStopped };
  Kind kind = Kind::kSucceeded;
  std::string stop_reason;               // when kStopped: why the check stopped the workers
  std::vector<WorkerOutcome> outcomes;   // one per worker, in local-rank order
  std::optional<size_t> root_cause;      // index into outcomes when kFailed
  int signal = 0;                        // when kInterrupted
  std::optional<std::string> stop_note;  // when kInterrupted by a stop request: its reason
  int workers_started_warm = 0;          // adopted standbys (warm restarts); the rest started cold
  // Workers still running after their SIGKILL (asleep in the kernel), no longer waited for: no
  // restart on this node can have what they hold.
  std::vector<int> unreaped_ranks;
};

}  // namespace ddp::launch::report
