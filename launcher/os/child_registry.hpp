// ChildRegistry: the children a process forked and has not reaped yet, and the one way the
// launcher forks and reaps. A child starts here (start and confirm, or spawn: its own session,
// PR_SET_PDEATHSIG, the spec's cgroup), is reaped here (reap, wait), and is told apart here from
// the orphans the launcher adopts as a subreaper (reap_orphans never reaps one of ours). One per
// process that forks, owned by its top object (the node's session, a many-host launch) and lent
// to what starts children through it: os::ChildSet, run_to_end, run_captured, the Watchdog.
// Thread-safe: the registry's lock is held across fork and registration, so reap_orphans never
// sees a child of ours unregistered. Blocks only in confirm and wait.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/os/process.hpp"

namespace ddp::launch::os {

// A child forked by start() whose exec has not been confirmed yet.
struct StartedWorker {
  pid_t pid = -1;
  std::string executable;
  UniqueFd exec_errors;  // EOF on exec, or the child's errno
};

class ChildRegistry {
 public:
  ChildRegistry() = default;
  ChildRegistry(const ChildRegistry&) = delete;
  ChildRegistry& operator=(const ChildRegistry&) = delete;

  // Forks and execs spec as the leader of a new session (its pgid == its pid), born in
  // spec.cgroup_fd's cgroup if one is given (clone3's CLONE_INTO_CGROUP; before Linux 5.7 it
  // joins before exec, which waits for an RCU grace period), with PR_SET_PDEATHSIG=SIGKILL,
  // default signal dispositions and an empty signal mask, stdin from spec.stdin_fd or /dev/null.
  // Returns at once, so that many children exec in parallel.
  StartedWorker start(const SpawnSpec& spec);
  // Blocks until that child's exec succeeded (returns its pid) or failed (reaps it, throws
  // LaunchError with an actionable message).
  pid_t confirm(StartedWorker& started);
  // start, then confirm.
  pid_t spawn(const SpawnSpec& spec);
  // A plain fork (the watchdog's): 0 in the child, which must only call async-signal-safe
  // functions and _exit; the child's pid in the parent. Throws LaunchError naming `what` when
  // fork fails.
  pid_t fork_plain(const char* what);

  // waitpid(pid, WNOHANG): the decoded status once it has exited (it is reaped), a vanished
  // status if it is no child of ours (ECHILD), nullopt while it runs.
  std::optional<ExitStatus> reap(pid_t pid);
  // Blocks until pid exits; for processes known to be dying. A vanished status if it is no child
  // of ours (ECHILD).
  ExitStatus wait(pid_t pid);

  // The children registered now (forked here, not reaped yet).
  std::set<pid_t> pids() const;
  // Reaps each exited child of this process that is not registered (an orphan it adopted as a
  // subreaper, which no one else waits for); returns their pids.
  std::vector<pid_t> reap_orphans();
  // Stops waiting for pid (it outlived SIGKILL, asleep in the kernel): no longer registered, it
  // is reaped by reap_orphans if it ever ends.
  void give_up(pid_t pid) { forget(pid); }

 private:
  void forget(pid_t pid);

  mutable std::mutex mutex_;
  std::set<pid_t> pids_;
};

}  // namespace ddp::launch::os
