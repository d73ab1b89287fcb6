// Runs short-lived helper programs (the stack tools of a hang's post-mortem) at once, each to
// its end, with one time limit for all: each starts through the process's ChildRegistry as a
// worker does (its own session, killed with the launcher); the wait is on their pidfds (nothing polls; without
// pidfds, Linux < 5.3, a 20 ms look); at the limit every one still running gets SIGKILL to its
// process group and is reaped. Their output goes where each spec says. Blocks until all ended
// or the limit; never throws.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/os/child_registry.hpp"

namespace ddp::launch::os {

struct RunEnd {
  std::optional<ExitStatus> status;  // nullopt: it could not start (error), or was killed at the limit
  bool timed_out = false;
  std::string error;  // why it could not start
};

std::vector<RunEnd> run_to_end(ChildRegistry& children, const std::vector<SpawnSpec>& specs,
                               std::chrono::milliseconds limit);

}  // namespace ddp::launch::os
