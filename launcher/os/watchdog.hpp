// The orphan watchdog: a small forked process that outlives a SIGKILLed launcher just long
// enough to end what the launcher would have: SIGKILL to every worker process group it
// registered, then, as the sweep says, cgroup.kill on the job's cgroup (then its folders go)
// and SIGKILL to every process whose environment carries the job's token (a worker's
// descendant that left its group and its session: the launcher was its subreaper, but it is
// gone). The launcher owns one Watchdog and talks to it through a pipe; the watchdog runs its
// sweep when that pipe closes without the clean-end message the destructor sends (then it just
// exits, and the destructor reaps it). Not thread-safe; never blocks (a pipe write of one int;
// the destructor waits for an exit that is under way).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "launcher/os/child_registry.hpp"
#include "launcher/os/process.hpp"

namespace ddp::launch::os {

// What the watchdog ends besides the registered groups.
struct WatchdogSweep {
  std::string token;       // "NAME=VALUE" an environment entry of every job process; "" : none
  std::string cgroup_dir;  // the job's cgroup folder, killed and removed; "": none
};

class Watchdog {
 public:
  // Forks the watchdog, registered in children; call before any worker starts.
  explicit Watchdog(ChildRegistry& children, WatchdogSweep sweep = {});
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog();  // the clean end: the watchdog exits without a sweep and is reaped

  void watch(pid_t pgid);   // a new worker group to kill if the launcher dies
  void forget(pid_t pgid);  // that group is gone (reaped and cleaned up)

  static constexpr size_t kMaxWatched = 65536;

 private:
  void send(int message);
  ChildRegistry& children_;
  UniqueFd to_watchdog_;
  pid_t pid_ = -1;
};

}  // namespace ddp::launch::os
