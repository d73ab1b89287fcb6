// POSIX implementation of watchdog.hpp: the forked watchdog's loop reads +pgid / -pgid
// messages from the launcher and, on EOF (the launcher is gone), SIGKILLs what is left.
#include "launcher/os/watchdog.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::os {
namespace {

// Runs in the forked watchdog: survive the launcher's terminal signals, keep the groups
// the messages name, and on EOF SIGKILL every group still registered.
[[noreturn]] void watchdog_loop(int from_launcher) {
  ::setsid();
  int devnull = ::open("/dev/null", O_RDWR);
  for (int fd : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) ::dup2(devnull, fd);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2}) ::signal(s, SIG_IGN);
  // No allocation after fork (another thread may have held the malloc lock): a fixed table.
  static pid_t groups[Watchdog::kMaxWatched];
  size_t count = 0;
  int message = 0;
  for (;;) {
    ssize_t n = ::read(from_launcher, &message, sizeof message);
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof message)) break;
    if (message > 0 && count < Watchdog::kMaxWatched) {
      groups[count++] = message;
    } else if (message < 0) {
      for (size_t i = 0; i < count; ++i)
        if (groups[i] == -message) groups[i] = groups[--count];
    }
  }
  for (size_t i = 0; i < count; ++i) ::kill(-groups[i], SIGKILL);
  ::_exit(0);
}

}  // namespace

Watchdog::Watchdog() {
  Pipe p = make_pipe();
  pid_t pid = ::fork();
  if (pid < 0)
    throw LaunchError(exit_code::kInternalError,
                      fmt::format("cannot fork the orphan watchdog: {}", std::strerror(errno)));
  if (pid == 0) {
    p.write_end.reset();
    watchdog_loop(p.read_end.get());
  }
  pid_ = pid;
  to_watchdog_ = std::move(p.write_end);
}

Watchdog::~Watchdog() {
  // EOF: the watchdog kills what is still registered (nothing, after a clean run), then
  // exits; init reaps it. Not waiting keeps the launcher's exit instant.
  to_watchdog_.reset();
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
