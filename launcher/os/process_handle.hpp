// ProcessHandle: one process held by a pidfd, so that a signal can never reach another
// process that reused its pid, and its end can be awaited (the fd turns readable) though it is
// no child of ours. Opened from a process-table entry and checked against its start time.
// Move-only; never blocks.
#pragma once

#include <sys/types.h>

#include <optional>

#include "launcher/os/process.hpp"
#include "launcher/os/process_table.hpp"

namespace ddp::launch::os {

class ProcessHandle {
 public:
  // The process `seen` names, if it still runs (and is not a zombie); nullopt once it is gone
  // or its pid was reused. Without pidfds (Linux < 5.3) it holds the pid and its start time, and
  // checks them before each signal (a narrow window remains there).
  static std::optional<ProcessHandle> open(const ProcessEntry& seen);

  pid_t pid() const { return pid_; }
  // pidfd_send_signal; false once the process is gone.
  bool signal(int signo) const;
  // Whether it has ended (its fd is readable); does not wait.
  bool ended() const;

 private:
  ProcessHandle(pid_t pid, uint64_t start_ticks, UniqueFd fd)
      : pid_(pid), start_ticks_(start_ticks), fd_(std::move(fd)) {}
  bool same_process_runs() const;  // without a pidfd: the pid still names the process seen
  pid_t pid_;
  uint64_t start_ticks_;
  UniqueFd fd_;  // invalid without pidfds
};

}  // namespace ddp::launch::os
