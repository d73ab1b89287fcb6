// POSIX implementation of watchdog.hpp: the forked watchdog's loop reads +pgid / -pgid
// messages from the launcher and, on EOF (the launcher is gone), SIGKILLs what is left. After
// fork only system calls and fixed buffers: another thread may have held the malloc lock.
#include "launcher/os/watchdog.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::os {
namespace {

constexpr int kCleanEnd = 0;               // the message of a launcher that ends cleanly
constexpr int kSweepRounds = 50;           // token scans until one finds nothing
constexpr useconds_t kSweepPause = 20000;  // between them
constexpr int kCgroupWaitRounds = 500;     // x 10 ms for the killed cgroup to empty

// Calls visit(name, is_dir) for each entry of the folder open as fd, read through buffer.
template <size_t N, typename Visit>
void for_each_entry(int fd, char (&buffer)[N], Visit visit) {
  for (;;) {
    const long n = ::syscall(SYS_getdents64, fd, buffer, N);
    if (n <= 0) return;
    for (long at = 0; at < n;) {
      const auto* d = reinterpret_cast<const dirent64*>(buffer + at);  // getdents64's record
      at += d->d_reclen;
      if (std::strcmp(d->d_name, ".") != 0 && std::strcmp(d->d_name, "..") != 0) visit(d->d_name, d->d_type == DT_DIR);
    }
  }
}

bool all_digits(const char* s) {
  if (!*s) return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

// path + "/" + name into out (size PATH_MAX); false if it does not fit.
bool join(char* out, const char* path, const char* name) {
  const size_t a = std::strlen(path), b = std::strlen(name);
  if (a + 1 + b + 1 > PATH_MAX) return false;
  std::memcpy(out, path, a);
  out[a] = '/';
  std::memcpy(out + a + 1, name, b + 1);
  return true;
}

// Whether the environment block of process `pid_name` holds the entry `needle` exactly.
bool environ_holds(const char* pid_name, const char* needle, size_t needle_len) {
  static char env[1 << 20];
  char path[64];
  if (std::snprintf(path, sizeof path, "/proc/%s/environ", pid_name) >= static_cast<int>(sizeof path)) return false;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t len = 0;
  ssize_t n;
  while (len < sizeof env && (n = ::read(fd, env + len, sizeof env - len)) > 0) len += static_cast<size_t>(n);
  ::close(fd);
  for (size_t at = 0; at < len;) {
    const char* entry = env + at;
    const size_t rest = len - at;
    const void* nul = std::memchr(entry, '\0', rest);
    const size_t entry_len = nul ? static_cast<size_t>(static_cast<const char*>(nul) - entry) : rest;
    if (entry_len == needle_len && std::memcmp(entry, needle, needle_len) == 0) return true;
    at += entry_len + 1;
  }
  return false;
}

// SIGKILL to every other process whose environment holds needle; whether there was one.
bool kill_token_holders(const char* needle) {
  const int proc = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (proc < 0) return false;
  const pid_t self = ::getpid();
  const size_t needle_len = std::strlen(needle);
  bool found = false;
  static char entries[32768];
  for_each_entry(proc, entries, [&](const char* name, bool) {
    if (!all_digits(name) || std::atol(name) == self || !environ_holds(name, needle, needle_len)) return;
    ::kill(static_cast<pid_t>(std::atol(name)), SIGKILL);
    found = true;
  });
  ::close(proc);
  return found;
}

bool cgroup_populated(const char* dir) {
  char path[PATH_MAX], text[256] = {};
  if (!join(path, dir, "cgroup.events")) return false;
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const ssize_t n = ::read(fd, text, sizeof text - 1);
  ::close(fd);
  return n > 0 && std::strstr(text, "populated 1") != nullptr;
}

// rmdir of dir and the cgroups nested in it, deepest first.
void remove_cgroup_folders(const char* dir, int depth) {
  const int fd = ::open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  char entries[4096];  // on the stack: each level lists its own folder
  if (depth < 16)
    for_each_entry(fd, entries, [&](const char* name, bool is_dir) {
      char child[PATH_MAX];
      if (is_dir && join(child, dir, name)) remove_cgroup_folders(child, depth + 1);
    });
  ::close(fd);
  ::rmdir(dir);
}

void kill_cgroup_tree(const char* dir) {
  char path[PATH_MAX];
  if (!join(path, dir, "cgroup.kill")) return;
  const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;  // gone already: the launcher removed it
  [[maybe_unused]] ssize_t n = ::write(fd, "1", 1);
  ::close(fd);
  for (int i = 0; i < kCgroupWaitRounds && cgroup_populated(dir); ++i) ::usleep(10000);
  remove_cgroup_folders(dir, 0);
}

// Runs in the forked watchdog: survive the launcher's terminal signals, keep the groups
// the messages name, and on EOF SIGKILL every group still registered, then sweep.
[[noreturn]] void watchdog_loop(int from_launcher, const WatchdogSweep& sweep) {
  ::setsid();
  int devnull = ::open("/dev/null", O_RDWR);
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) ::dup2(devnull, fd);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2}) ::signal(s, SIG_IGN);
  static pid_t groups[Watchdog::kMaxWatched];
  size_t count = 0;
  int message = 0;
  bool clean = false;  // the launcher ended everything itself: no sweep
  for (;;) {
    ssize_t n = ::read(from_launcher, &message, sizeof message);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof message)) break;
    if (message == kCleanEnd) {
      clean = true;
      break;
    }
    if (message > 0 && count < Watchdog::kMaxWatched) {
      groups[count++] = message;
    } else if (message < 0) {
      for (size_t i = 0; i < count; ++i)
        if (groups[i] == -message) groups[i] = groups[--count];
    }
  }
  for (size_t i = 0; i < count; ++i) ::kill(-groups[i], SIGKILL);
  if (clean) ::_exit(0);
  if (!sweep.cgroup_dir.empty()) kill_cgroup_tree(sweep.cgroup_dir.c_str());
  if (!sweep.token.empty())
    for (int round = 0; round < kSweepRounds && kill_token_holders(sweep.token.c_str()); ++round) ::usleep(kSweepPause);
  ::_exit(0);
}

}  // namespace

Watchdog::Watchdog(ChildRegistry& children, WatchdogSweep sweep) : children_(children) {
  Pipe p = make_pipe();
  const pid_t pid = children_.fork_plain("the orphan watchdog");  // registered: never an orphan to sweep
  if (pid == 0) {
    p.write_end.reset();
    watchdog_loop(p.read_end.get(), sweep);
  }
  pid_ = pid;
  to_watchdog_ = std::move(p.write_end);
}

Watchdog::~Watchdog() {
  // The launcher ends cleanly: its own sweeps ended everything; the watchdog exits at once,
  // reaped here, so that nothing of the launcher's outlives it either.
  send(kCleanEnd);
  to_watchdog_.reset();
  children_.wait(pid_);
}

void Watchdog::watch(pid_t pgid) { send(pgid); }
void Watchdog::forget(pid_t pgid) { send(-pgid); }

void Watchdog::send(int message) {
  ssize_t n;
  do {
    n = ::write(to_watchdog_.get(), &message, sizeof message);
  } while (n < 0 && errno == EINTR);
}

}  // namespace ddp::launch::os
