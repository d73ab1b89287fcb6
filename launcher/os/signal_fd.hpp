// A signalfd for a poll loop: blocks the given signals in this thread and reads them as
// file events (the many-host coordinator's SIGINT/SIGTERM/SIGHUP/SIGCHLD). Children started
// with os::spawn_worker get an empty mask back. Not thread-safe; one per process.
#pragma once

#include <vector>

#include "launcher/os/process.hpp"

namespace ddp::launch::os {

class SignalFd {
 public:
  explicit SignalFd(const std::vector<int>& signals);  // throws LaunchError(kInternalError)
  ~SignalFd();                                         // restores the previous mask
  SignalFd(const SignalFd&) = delete;
  SignalFd& operator=(const SignalFd&) = delete;

  int fd() const { return fd_.get(); }
  // The signals that arrived since the last call (never blocks).
  std::vector<int> take();

 private:
  UniqueFd fd_;
  std::vector<int> signals_;
};

}  // namespace ddp::launch::os
