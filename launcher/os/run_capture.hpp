// Runs a helper program to its end with a time limit, its stdout and stderr captured together
// (the launcher's short-lived helpers: the NCCL probe). The helper starts through the process's
// ChildRegistry as a worker does (its own session, killed with the launcher); at the limit its whole
// process group gets SIGKILL. Blocks until the helper ends or the limit; throws LaunchError
// only when it cannot start.
#pragma once

#include <chrono>
#include <string>

#include "launcher/os/child_registry.hpp"

namespace ddp::launch::os {

struct Captured {
  ExitStatus status;
  bool timed_out = false;
  std::string output;  // stdout and stderr as they came, the last kCapturedBytes of them
};

inline constexpr size_t kCapturedBytes = 64 * 1024;

// spec.stdout_fd and spec.stderr_fd are replaced by the capture's pipe.
Captured run_captured(ChildRegistry& children, SpawnSpec spec, std::chrono::milliseconds limit);

// This process's environment as "KEY=VALUE" entries (for a helper that inherits it).
std::vector<std::string> current_environment();

}  // namespace ddp::launch::os
