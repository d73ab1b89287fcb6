// The orphan watchdog: a small forked process that outlives a SIGKILLed launcher just
// long enough to SIGKILL every worker process group the launcher registered (workers'
// own children included). The launcher owns one Watchdog and talks to it through a pipe;
// the watchdog exits on its own when that pipe closes. Not thread-safe; never blocks
// (a pipe write of one int).
#pragma once

#include <sys/types.h>

#include <cstddef>

#include "launcher/os/process.hpp"

namespace ddp::launch::os {

class Watchdog {
 public:
  Watchdog();  // forks the watchdog; call before any worker starts
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;
  ~Watchdog();  // closes the pipe; the watchdog exits on its own (not waited for)

  void watch(pid_t pgid);   // a new worker group to kill if the launcher dies
  void forget(pid_t pgid);  // that group is gone (reaped and cleaned up)

  static constexpr size_t kMaxWatched = 65536;

 private:
  void send(int message);
  UniqueFd to_watchdog_;
  pid_t pid_ = -1;
};

}  // namespace ddp::launch::os
