// What a wait for child processes and files looks at, without polling in a loop: a child's
// pidfd (readable once it has ended: it must be our child, or held since it ran, so the pid
// cannot be reused meanwhile), an inotify watch on a folder (readable once a name appears in
// it), and one blocking wait on several such descriptors with a time limit. Where the kernel
// has no pidfds (Linux < 5.3) or inotify fails, the descriptor is invalid and the wait looks
// again after 20 ms instead. Never throws.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "launcher/os/process.hpp"

namespace ddp::launch::os {

// pidfd_open(pid): invalid when the kernel has none, or pid is gone.
UniqueFd open_pidfd(pid_t pid);

// An inotify watch on `dir` for names created, moved or linked into it.
class FolderWatch {
 public:
  explicit FolderWatch(const std::string& dir);
  const UniqueFd& fd() const { return fd_; }
  // Reads the events that made it readable (their names are not needed: the caller looks).
  void drain() const;
  // Hands the descriptor over (to an Asio descriptor on a loop, which then reads the events).
  UniqueFd take() { return std::move(fd_); }

 private:
  UniqueFd fd_;
};

// Blocks until one of `fds` is readable, or `limit` passed (at most 20 ms when one of them is
// invalid: the caller looks again then).
void wait_readable(const std::vector<const UniqueFd*>& fds, std::chrono::milliseconds limit);

}  // namespace ddp::launch::os
