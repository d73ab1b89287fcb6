// What the standby hook (standby_hook.cpp) shares with ddp::standby_point() (standby_point.cpp)
// and with the environment reader: how a standby becomes the worker it is handed, and the
// variable that marks a standby running main() above its standby point. Torch-free.
#pragma once

namespace ddp::detail {

// Set in a standby whose program calls ddp::standby_point(), from the hook until the handoff
// (which replaces the whole environment): reading the worker's identity then is a mistake.
inline constexpr const char* kStandbyPendingEnvVar = "DDP_LAUNCH_STANDBY_PENDING";

// Says ready on the launcher's channel `fd`, blocks until it hands this standby a worker and
// becomes it (environment, cwd, stdin/stdout/stderr); exits 0 when the launcher lets the
// standby go, 127 on a broken handoff (the launcher then starts that worker cold).
void become_handed_worker(int fd);

}  // namespace ddp::detail
