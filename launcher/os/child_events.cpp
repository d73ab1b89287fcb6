#include "launcher/os/child_events.hpp"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace ddp::launch::os {

UniqueFd open_pidfd(pid_t pid) {
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  return UniqueFd(fd < 0 ? -1 : static_cast<int>(fd));
}

FolderWatch::FolderWatch(const std::string& dir) : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
  if (fd_.valid() && ::inotify_add_watch(fd_.get(), dir.c_str(), IN_CREATE | IN_MOVED_TO) < 0) fd_.reset();
}

void FolderWatch::drain() const {
  if (!fd_.valid()) return;
  alignas(inotify_event) char buf[4096];
  while (::read(fd_.get(), buf, sizeof buf) > 0) {
  }
}

void wait_readable(const std::vector<const UniqueFd*>& fds, std::chrono::milliseconds limit) {
  std::vector<pollfd> polled;
  for (const UniqueFd* fd : fds) {
    if (fd->valid()) polled.push_back({fd->get(), POLLIN, 0});
    else limit = std::min(limit, std::chrono::milliseconds(20));
  }
  limit = std::max(limit, std::chrono::milliseconds(0));
  if (::poll(polled.data(), polled.size(), static_cast<int>(limit.count())) < 0 && errno != EINTR)
    ::usleep(20 * 1000);  // poll itself failed (it should not): do not spin
}

}  // namespace ddp::launch::os
