// POSIX implementation of standby_channel.hpp: socketpair, sendmsg with SCM_RIGHTS and
// poll for the rest of the frame, a chunked file scan.
#include "launcher/os/standby_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::os {
namespace {

using Clock = std::chrono::steady_clock;

// Sends from data[0..n); the fds ride along when given. Returns bytes sent, -1 with errno.
ssize_t send_part(int channel, const char* data, size_t n, const std::array<int, 3>* fds) {
  struct iovec iov {
    const_cast<char*>(data), n
  };
  struct msghdr msg {};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * 3)] = {};
  if (fds) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * 3);
    std::memcpy(CMSG_DATA(c), fds->data(), sizeof(int) * 3);
  }
  return ::sendmsg(channel, &msg, MSG_NOSIGNAL);
}

}  // namespace

ChannelPair make_channel() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw LaunchError(exit_code::kInternalError,
                      fmt::format("cannot create a standby's control channel: {}", std::strerror(errno)));
  return ChannelPair{UniqueFd(fds[0]), UniqueFd(fds[1])};
}

bool send_handoff(int channel, const std::string& frame, const std::array<int, 3>& fds,
                  std::chrono::milliseconds timeout, std::string* error) {
  const auto deadline = Clock::now() + timeout;
  size_t sent = 0;
  while (sent < frame.size()) {
    const ssize_t n = send_part(channel, frame.data() + sent, frame.size() - sent, sent == 0 ? &fds : nullptr);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      struct pollfd p {
        channel, POLLOUT, 0
      };
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) == 0) {
        *error = fmt::format("the standby did not read its handoff within {} ms", timeout.count());
        return false;
      }
      continue;
    }
    *error = fmt::format("the standby is gone ({})", n < 0 ? std::strerror(errno) : "nothing sent");
    return false;
  }
  return true;
}

UniqueFd open_dev_null() {
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw LaunchError(exit_code::kInternalError, fmt::format("cannot open /dev/null: {}", std::strerror(errno)));
  return UniqueFd(fd);
}

bool file_contains(const std::string& path, std::string_view needle) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid() || needle.empty()) return false;
  std::vector<char> buffer(1 << 20);
  size_t kept = 0;  // the tail of the previous chunk, so that a marker across chunks is found
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer.data() + kept, buffer.size() - kept);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    const size_t have = kept + static_cast<size_t>(n);
    if (std::string_view(buffer.data(), have).find(needle) != std::string_view::npos) return true;
    kept = std::min(have, needle.size() - 1);
    std::memmove(buffer.data(), buffer.data() + have - kept, kept);
  }
}

}  // namespace ddp::launch::os
