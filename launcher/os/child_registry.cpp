// POSIX implementation of child_registry.hpp: fork (or clone3 into a cgroup) and exec with a
// CLOEXEC error pipe, sessions, PDEATHSIG, waitpid, and the registry under one lock.
#include "launcher/os/child_registry.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/os/process_table.hpp"

namespace ddp::launch::os {
namespace {

// What the exec-error pipe carries when joining the cgroup failed: this plus the errno.
constexpr int kCgroupJoinFailed = 1 << 20;

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// Runs in the forked child: only async-signal-safe calls until execve (after clone3, not even
// those that read glibc's cached thread id: raise, pthread_*). cpus: the CPU set to bind to
// (--numa-binding), or nullptr. join_cgroup: the child was not born in spec.cgroup_fd's cgroup.
[[noreturn]] void exec_child(const SpawnSpec& spec, char* const* argv, char* const* envp, pid_t parent, int error_fd,
                             const cpu_set_t* cpus, bool join_cgroup) {
  auto fail = [error_fd](int err) {
    [[maybe_unused]] ssize_t n = ::write(error_fd, &err, sizeof err);
    ::_exit(exit_code::kProgramNotExecutable);
  };
  if (::setsid() < 0) fail(errno);
  if (join_cgroup && spec.cgroup_fd >= 0) {  // not born there (clone3 unavailable): join now
    const int procs = ::openat(spec.cgroup_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
    if (procs < 0 || ::write(procs, "0", 1) != 1) fail(kCgroupJoinFailed + errno);
    ::close(procs);
  }
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail(errno);
  if (::getppid() != parent) ::_exit(exit_code::kInternalError);  // launcher already gone
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; ++s) ::sigaction(s, &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (spec.stdin_fd >= 0) {
    if (spec.stdin_fd != STDIN_FILENO && ::dup2(spec.stdin_fd, STDIN_FILENO) < 0) fail(errno);
  } else if (int devnull = ::open("/dev/null", O_RDONLY); devnull >= 0 && devnull != STDIN_FILENO) {
    ::dup2(devnull, STDIN_FILENO);
    ::close(devnull);
  }
  if (spec.stdout_fd >= 0 && ::dup2(spec.stdout_fd, STDOUT_FILENO) < 0) fail(errno);
  if (spec.stderr_fd >= 0 && ::dup2(spec.stderr_fd, STDERR_FILENO) < 0) fail(errno);
  if (spec.inherit_fd >= 0 && ::fcntl(spec.inherit_fd, F_SETFD, 0) != 0) fail(errno);
  if (cpus) ::sched_setaffinity(0, sizeof(cpu_set_t), cpus);  // the set was checked against the allowed CPUs
  ::execve(spec.executable.c_str(), argv, envp);
  fail(errno);
  ::_exit(exit_code::kInternalError);
}

// fork(), or clone3 with CLONE_INTO_CGROUP when the child is to start in a cgroup: born there,
// it never migrates (a migration waits for an RCU grace period, several ms, per worker).
// *born_in_cgroup says which happened; ENOSYS/EINVAL/E2BIG (Linux < 5.7) fall back to fork().
pid_t fork_into(int cgroup_fd, bool* born_in_cgroup) {
  *born_in_cgroup = false;
  if (cgroup_fd >= 0) {
    struct clone_args args {};
    args.flags = CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = static_cast<uint64_t>(cgroup_fd);
    const long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid >= 0) {
      *born_in_cgroup = true;
      return static_cast<pid_t>(pid);
    }
    if (errno != ENOSYS && errno != EINVAL && errno != E2BIG) return -1;
  }
  return ::fork();
}

[[noreturn]] void fork_failed(const char* what) {
  throw LaunchError(exit_code::kInternalError, fmt::format("cannot fork {}: {}", what, std::strerror(errno)));
}

// waitpid(pid, flags), retried on EINTR.
pid_t wait_pid(pid_t pid, int* status, int flags) {
  pid_t r;
  do {
    r = ::waitpid(pid, status, flags);
  } while (r < 0 && errno == EINTR);
  return r;
}

}  // namespace

StartedWorker ChildRegistry::start(const SpawnSpec& spec) {
  auto argv = c_strings(spec.argv);
  auto envp = c_strings(spec.env);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : spec.cpu_affinity)
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &cpus);
  const cpu_set_t* cpus_ptr = spec.cpu_affinity.empty() ? nullptr : &cpus;
  Pipe errors = make_pipe();
  pid_t parent = ::getpid();
  std::lock_guard<std::mutex> lock(mutex_);
  bool born_in_cgroup = false;
  pid_t pid = fork_into(spec.cgroup_fd, &born_in_cgroup);
  if (pid < 0) fork_failed("a worker");
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), parent, errors.write_end.get(), cpus_ptr, !born_in_cgroup);
  pids_.insert(pid);
  return StartedWorker{pid, spec.executable, std::move(errors.read_end)};
}

pid_t ChildRegistry::confirm(StartedWorker& started) {
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(started.exec_errors.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  started.exec_errors.reset();
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    wait(started.pid);
    if (child_errno >= kCgroupJoinFailed)
      throw LaunchError(exit_code::kInternalError,
                        fmt::format("cannot start '{}': it cannot join the job's cgroup: {}; run with "
                                    "--containment=subreaper to contain the workers without a cgroup",
                                    started.executable, std::strerror(child_errno - kCgroupJoinFailed)));
    throw LaunchError(child_errno == ENOENT ? exit_code::kProgramNotFound : exit_code::kProgramNotExecutable,
                      fmt::format("cannot start '{}': {}", started.executable, std::strerror(child_errno)));
  }
  return started.pid;
}

pid_t ChildRegistry::spawn(const SpawnSpec& spec) {
  StartedWorker started = start(spec);
  return confirm(started);
}

pid_t ChildRegistry::fork_plain(const char* what) {
  std::lock_guard<std::mutex> lock(mutex_);
  const pid_t pid = ::fork();
  if (pid < 0) fork_failed(what);
  if (pid > 0) pids_.insert(pid);
  return pid;
}

std::optional<ExitStatus> ChildRegistry::reap(pid_t pid) {
  int status = 0;
  const pid_t r = wait_pid(pid, &status, WNOHANG);
  if (r == pid) {
    forget(pid);
    return decode_wait_status(status);
  }
  if (r < 0 && errno == ECHILD) {
    forget(pid);
    return ExitStatus::unknown();
  }
  return std::nullopt;
}

ExitStatus ChildRegistry::wait(pid_t pid) {
  int status = 0;
  const pid_t r = wait_pid(pid, &status, 0);
  forget(pid);
  return r == pid ? decode_wait_status(status) : ExitStatus::unknown();
}

std::set<pid_t> ChildRegistry::pids() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pids_;
}

void ChildRegistry::forget(pid_t pid) {
  std::lock_guard<std::mutex> lock(mutex_);
  pids_.erase(pid);
}

std::vector<pid_t> ChildRegistry::reap_orphans() {
  std::vector<pid_t> reaped;
  siginfo_t info{};
  // Nothing has exited (the common case): no /proc walk.
  if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return reaped;
  std::lock_guard<std::mutex> lock(mutex_);
  const pid_t self = ::getpid();
  for (const ProcessEntry& e : read_process_table()) {
    if (e.ppid != self || !e.zombie() || pids_.count(e.pid)) continue;
    int status = 0;
    if (wait_pid(e.pid, &status, WNOHANG) == e.pid) reaped.push_back(e.pid);
  }
  return reaped;
}

}  // namespace ddp::launch::os
