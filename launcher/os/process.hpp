// Every POSIX process detail of the launcher lives in os/: here, what a child is started from
// (SpawnSpec), signalling whole process groups, decoding wait statuses, pipes and terminals;
// forking and reaping are ChildRegistry's (child_registry.hpp), the orphan watchdog is in
// watchdog.hpp. Nothing outside os/ includes <sys/wait.h> or forks, waits or execs itself
// (scripts/check-design.sh checks it). Nothing here blocks.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/base/signal_names.hpp"

namespace ddp::launch::os {

// An owned file descriptor; closes on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct Pipe {
  UniqueFd read_end;
  UniqueFd write_end;
};
Pipe make_pipe();  // both ends O_CLOEXEC; throws LaunchError on failure

// How a process ended, decoded from a wait status; or, when waitpid failed with ECHILD
// (the child was reaped behind our back, e.g. by a library's wait), `vanished`: how it
// ended is unknown, and it must not read as a signal or as success.
struct ExitStatus {
  bool signaled = false;
  int code = 0;           // exit code when !signaled
  int signal = 0;         // signal number when signaled
  bool vanished = false;  // waitpid: ECHILD; signaled, code and signal mean nothing
  bool success() const { return !vanished && !signaled && code == 0; }
  // code, 128 + signal, or exit_code::kInternalError (120) when vanished.
  int launcher_exit_code() const;
  // "exit code 3" / "signal 9 (SIGKILL)" / "exit status unknown: the process vanished (ECHILD)"
  std::string describe() const;
  static ExitStatus unknown();  // the vanished status
};
ExitStatus decode_wait_status(int raw_status);

// Finds PROGRAM like execvp would (a name with '/' is used as is, else each PATH entry).
// Throws LaunchError (127 not found, 126 not executable) with an actionable message.
std::string resolve_program(const std::string& program, const std::string& path_env);

struct SpawnSpec {
  std::string executable;         // absolute or relative path (already resolved)
  std::vector<std::string> argv;  // argv[0] included
  std::vector<std::string> env;   // "KEY=VALUE" entries: the whole environment
  int stdout_fd = -1;             // -1: inherit the launcher's
  int stderr_fd = -1;
  int stdin_fd = -1;                // -1: /dev/null; else dup'ed (e.g. the launcher's terminal)
  int inherit_fd = -1;              // an O_CLOEXEC fd the child keeps across exec (a standby's channel)
  std::vector<int> cpu_affinity{};  // CPUs the child is bound to before exec (--numa-binding); empty: inherited
  int cgroup_fd = -1;               // a cgroup's folder (cgroup.hpp) the child starts in; -1: the launcher's
};

// The CPUs this process may run on (sched_getaffinity), ascending; empty if unknown.
std::vector<int> allowed_cpus();

// Makes this process the subreaper of its descendants (PR_SET_CHILD_SUBREAPER): a process
// whose parent dies is re-parented to it, not to init, however it left (setsid, double fork).
// False if the kernel refuses (errno says why). ChildRegistry::reap_orphans reaps them.
bool become_subreaper();

// kill(-pgid, sig); a group that no longer exists is not an error.
void signal_group(pid_t pgid, int signo);
// kill(pid, sig): that one process, not its group; one that no longer exists is not an error.
void signal_process(pid_t pid, int signo);
// tgkill(pid, pid, sig): the process's main thread itself, not whichever thread takes a signal
// sent to the process (a worker's faulthandler dumps the thread that received it).
void signal_main_thread(pid_t pid, int signo);

std::string host_name();

// Terminals: whether fd is one; its width in columns (0 if unknown); whether two fds are
// the same terminal (or file).
bool is_terminal(int fd);
int terminal_columns(int fd);
bool same_file(int fd_a, int fd_b);

// Ignores SIGPIPE in the launcher (a closed console must not kill it). Workers get the
// default back as they start (ChildRegistry::start).
void ignore_sigpipe();

// Ends the process now with `code`, from any thread: no destructor, atexit handler or stdio
// flush runs (as a SIGKILL would, without a signal). Workers go by PR_SET_PDEATHSIG and the
// watchdog.
[[noreturn]] void exit_at_once(int code);

}  // namespace ddp::launch::os
