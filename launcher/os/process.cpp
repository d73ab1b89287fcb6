// POSIX implementation of process.hpp: fork/exec with a CLOEXEC error pipe, sessions,
// PDEATHSIG, waiting and wait-status decoding.
#include "launcher/os/process.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"
#include "launcher/os/process_table.hpp"

namespace ddp::launch::os {
namespace {

// What the exec-error pipe carries when joining the cgroup failed: this plus the errno.
constexpr int kCgroupJoinFailed = 1 << 20;

[[noreturn]] void throw_errno(const std::string& what) {
  throw LaunchError(exit_code::kInternalError, fmt::format("{}: {}", what, std::strerror(errno)));
}

std::vector<char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

bool is_executable_file(const std::string& path, int* why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *why = errno;
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *why = EISDIR;
    return false;
  }
  if (::access(path.c_str(), X_OK) != 0) {
    *why = errno;
    return false;
  }
  return true;
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

// The children forked here and not reaped yet: what reap_adopted_orphans must leave alone.
// Held across fork and registration, so a reaper never sees a child of ours unregistered.
std::mutex forked_mutex;
std::set<pid_t> forked;

void forget_forked(pid_t pid) {
  std::lock_guard<std::mutex> lock(forked_mutex);
  forked.erase(pid);
}

}  // namespace

std::set<pid_t> forked_children() {
  std::lock_guard<std::mutex> lock(forked_mutex);
  return forked;
}

void note_forked(pid_t pid) {
  std::lock_guard<std::mutex> lock(forked_mutex);
  forked.insert(pid);
}

bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

std::vector<pid_t> reap_adopted_orphans() {
  std::vector<pid_t> reaped;
  siginfo_t info{};
  // Nothing has exited (the common case): no /proc walk.
  if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return reaped;
  std::lock_guard<std::mutex> lock(forked_mutex);
  const pid_t self = ::getpid();
  for (const ProcessEntry& e : read_process_table()) {
    if (e.ppid != self || !e.zombie() || forked.count(e.pid)) continue;
    int status = 0;
    if (::waitpid(e.pid, &status, WNOHANG) == e.pid) reaped.push_back(e.pid);
  }
  return reaped;
}

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

int UniqueFd::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Pipe make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("cannot create a pipe");
  return Pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

int ExitStatus::launcher_exit_code() const {
  if (vanished) return exit_code::kInternalError;
  return signaled ? exit_code::from_signal(signal) : code;
}

std::string ExitStatus::describe() const {
  if (vanished) return "exit status unknown: the process vanished (ECHILD)";
  if (signaled) return fmt::format("signal {} ({})", signal, signal_name(signal));
  return fmt::format("exit code {}", code);
}

ExitStatus ExitStatus::unknown() {
  ExitStatus s;
  s.vanished = true;
  return s;
}

ExitStatus decode_wait_status(int raw_status) {
  ExitStatus s;
  if (WIFSIGNALED(raw_status)) {
    s.signaled = true;
    s.signal = WTERMSIG(raw_status);
  } else if (WIFEXITED(raw_status)) {
    s.code = WEXITSTATUS(raw_status);
  }
  return s;
}

std::string resolve_program(const std::string& program, const std::string& path_env) {
  int why = 0;
  auto fail = [&](const std::string& shown) -> std::string {
    if ((why == ENOENT || why == ENOTDIR) && program.find('/') != std::string::npos)
      throw LaunchError(exit_code::kProgramNotFound,
                        fmt::format("program '{}' not found{}; check the path", program, shown));
    if (why == ENOENT || why == ENOTDIR)
      throw LaunchError(exit_code::kProgramNotFound,
                        fmt::format("program '{}' not found{}; give a path to an executable "
                                    "(e.g. ./{}) or put it on PATH",
                                    program, shown, program));
    throw LaunchError(exit_code::kProgramNotExecutable,
                      fmt::format("program '{}' cannot be executed: {}; check it is a program "
                                  "with the execute bit (chmod +x), or run a .py script with python",
                                  program, std::strerror(why)));
  };
  if (program.find('/') != std::string::npos) {
    if (is_executable_file(program, &why)) return program;
    return fail("");
  }
  int first_error = ENOENT;
  for (const auto& dir : split(path_env, ':')) {  // an empty entry means "."
    std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
    if (is_executable_file(candidate, &why)) return candidate;
    if (why != ENOENT && why != ENOTDIR && first_error == ENOENT) first_error = why;
  }
  why = first_error;
  return fail(" on PATH");
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> out;
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  return out;
}

StartedWorker start_worker(const SpawnSpec& spec) {
  auto argv = c_strings(spec.argv);
  auto envp = c_strings(spec.env);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int cpu : spec.cpu_affinity)
    if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &cpus);
  const cpu_set_t* cpus_ptr = spec.cpu_affinity.empty() ? nullptr : &cpus;
  Pipe errors = make_pipe();
  pid_t parent = ::getpid();
  std::unique_lock<std::mutex> lock(forked_mutex);
  bool born_in_cgroup = false;
  pid_t pid = fork_into(spec.cgroup_fd, &born_in_cgroup);
  if (pid < 0) throw_errno("cannot fork a worker");
  if (pid == 0) exec_child(spec, argv.data(), envp.data(), parent, errors.write_end.get(), cpus_ptr, !born_in_cgroup);
  forked.insert(pid);
  lock.unlock();
  return StartedWorker{pid, spec.executable, std::move(errors.read_end)};
}

pid_t confirm_exec(StartedWorker& started) {
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(started.exec_errors.get(), &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  started.exec_errors.reset();
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    wait_for(started.pid);
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

pid_t spawn_worker(const SpawnSpec& spec) {
  StartedWorker started = start_worker(spec);
  return confirm_exec(started);
}

void signal_group(pid_t pgid, int signo) {
  if (pgid > 0) ::kill(-pgid, signo);
}

void signal_process(pid_t pid, int signo) {
  if (pid > 0) ::kill(pid, signo);
}

void signal_main_thread(pid_t pid, int signo) {
  if (pid > 0) ::syscall(SYS_tgkill, pid, pid, signo);
}

std::optional<ExitStatus> try_reap(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == pid) {
    forget_forked(pid);
    return decode_wait_status(status);
  }
  if (r < 0 && errno == ECHILD) {
    forget_forked(pid);
    return ExitStatus::unknown();
  }
  return std::nullopt;
}

ExitStatus wait_for(pid_t pid) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(pid, &status, 0);
  } while (r < 0 && errno == EINTR);
  forget_forked(pid);
  return r == pid ? decode_wait_status(status) : ExitStatus::unknown();
}

bool is_terminal(int fd) { return ::isatty(fd) == 1; }

int terminal_columns(int fd) {
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0) return 0;
  return ws.ws_col;
}

bool same_file(int fd_a, int fd_b) {
  struct stat a {
  }, b{};
  if (::fstat(fd_a, &a) != 0 || ::fstat(fd_b, &b) != 0) return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "localhost";
  return buf;
}

void ignore_sigpipe() { ::signal(SIGPIPE, SIG_IGN); }

void exit_at_once(int code) { ::_exit(code); }

}  // namespace ddp::launch::os
