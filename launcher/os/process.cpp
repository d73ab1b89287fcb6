// POSIX implementation of process.hpp: descriptors and pipes, wait-status decoding, program
// lookup, signals, terminals (forking and reaping are child_registry.cpp's).
#include "launcher/os/process.hpp"

#include <fcntl.h>
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

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"

namespace ddp::launch::os {
namespace {

[[noreturn]] void throw_errno(const std::string& what) {
  throw LaunchError(exit_code::kInternalError, fmt::format("{}: {}", what, std::strerror(errno)));
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

}  // namespace

bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

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

void signal_group(pid_t pgid, int signo) {
  if (pgid > 0) ::kill(-pgid, signo);
}

void signal_process(pid_t pid, int signo) {
  if (pid > 0) ::kill(pid, signo);
}

void signal_main_thread(pid_t pid, int signo) {
  if (pid > 0) ::syscall(SYS_tgkill, pid, pid, signo);
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
