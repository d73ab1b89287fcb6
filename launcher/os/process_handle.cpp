// Linux implementation of process_handle.hpp: pidfd_open and pidfd_send_signal by syscall
// number (glibc 2.36 wraps them; older ones do not), poll for the end.
#include "launcher/os/process_handle.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

namespace ddp::launch::os {

std::optional<ProcessHandle> ProcessHandle::open(const ProcessEntry& seen) {
  const long fd = ::syscall(SYS_pidfd_open, seen.pid, 0);
  if (fd < 0 && errno != ENOSYS) return std::nullopt;  // gone
  ProcessHandle handle(seen.pid, seen.start_ticks, UniqueFd(fd < 0 ? -1 : static_cast<int>(fd)));
  // The fd holds whichever process has the pid now: it must be the one seen.
  if (!handle.same_process_runs()) return std::nullopt;
  return handle;
}

bool ProcessHandle::same_process_runs() const {
  std::optional<ProcessEntry> now = read_process(pid_);
  return now && now->start_ticks == start_ticks_ && !now->zombie();
}

bool ProcessHandle::signal(int signo) const {
  if (!fd_.valid()) return same_process_runs() && ::kill(pid_, signo) == 0;
  return ::syscall(SYS_pidfd_send_signal, fd_.get(), signo, nullptr, 0) == 0;
}

bool ProcessHandle::ended() const {
  if (!fd_.valid()) return !same_process_runs();
  pollfd p{fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

}  // namespace ddp::launch::os
