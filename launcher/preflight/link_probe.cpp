#include "launcher/preflight/link_probe.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <list>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fmt/format.h>

namespace ddp::launch::preflight {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kPings = 11;
constexpr int kClockSamples = 5;
constexpr size_t kFrame = 64 * 1024;
constexpr int kIoTimeoutMs = 5000;  // a peer that stops answering mid-measurement

struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd, o.fd);
    return *this;
  }
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Waits until fd is readable (POLLIN) or writable (POLLOUT); false on timeout or error.
bool ready(int fd, short events) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, kIoTimeoutMs);
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (!ready(fd, POLLOUT)) return false;
    } else {
      return false;
    }
  }
  return true;
}

bool read_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    if (!ready(fd, POLLIN)) return false;
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return false;
    }
  }
  return true;
}

bool write_u64(int fd, uint64_t v) {
  unsigned char b[8];
  for (int i = 7; i >= 0; --i, v >>= 8) b[i] = static_cast<unsigned char>(v & 0xff);
  return write_all(fd, b, 8);
}

bool read_u64(int fd, uint64_t& v) {
  unsigned char b[8];
  if (!read_all(fd, b, 8)) return false;
  v = 0;
  for (unsigned char c : b) v = (v << 8) | c;
  return true;
}

// Sends frames for `ns`, then the end frame.
bool send_frames(int fd, uint64_t ns) {
  static const std::vector<char> payload(kFrame, 0);
  const auto until = Clock::now() + std::chrono::nanoseconds(ns);
  const uint32_t len = htonl(static_cast<uint32_t>(kFrame));
  do {
    if (!write_all(fd, &len, 4) || !write_all(fd, payload.data(), payload.size())) return false;
  } while (Clock::now() < until);
  const uint32_t end = 0;
  return write_all(fd, &end, 4);
}

// Receives frames until the end frame: the payload bytes and the ns from the first byte on.
bool receive_frames(int fd, uint64_t& bytes, uint64_t& ns) {
  std::vector<char> buf(kFrame);
  bytes = 0;
  std::optional<Clock::time_point> first;
  for (;;) {
    uint32_t len = 0;
    if (!read_all(fd, &len, 4)) return false;
    if (!first) first = Clock::now();
    len = ntohl(len);
    if (len == 0) break;
    if (len > kFrame || !read_all(fd, buf.data(), len)) return false;
    bytes += len;
  }
  ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - *first).count());
  return true;
}

uint64_t realtime_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ULL + static_cast<uint64_t>(t.tv_nsec);
}

// One connection: commands until the peer closes it.
void serve(int fd) {
  for (;;) {
    char command = 0;
    if (!read_all(fd, &command, 1)) return;
    uint64_t a = 0, b = 0;
    switch (command) {
      case 'P':
        if (!write_all(fd, &command, 1)) return;
        break;
      case 'T':
        if (!write_u64(fd, realtime_ns())) return;
        break;
      case 'U':
        if (!receive_frames(fd, a, b) || !write_u64(fd, a) || !write_u64(fd, b)) return;
        break;
      case 'D':
        if (!read_u64(fd, a) || !send_frames(fd, a)) return;
        break;
      default: return;
    }
  }
}

Fd connect_to(const std::string& host, int port, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    error = fmt::format("cannot resolve {}: {}", host, ::gai_strerror(rc));
    return Fd();
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  for (addrinfo* a = found; a; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0));
    if (fd.fd < 0) continue;
    if (::connect(fd.fd, a->ai_addr, a->ai_addrlen) == 0) {
      const int one = 1;
      ::setsockopt(fd.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    error = fmt::format("cannot connect to {}:{}: {}", host, port, std::strerror(errno));
  }
  if (error.empty()) error = fmt::format("cannot connect to {}:{}", host, port);
  return Fd();
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

struct ProbeServer::Impl {
  Fd listener;
  int wake[2] = {-1, -1};  // the destructor writes here: the accept loop ends
  std::mutex mutex;
  struct Connection {
    int fd;
    std::atomic<bool> done{false};
    std::thread thread;
  };
  std::list<Connection> connections;
  std::atomic<int> active{0};
  std::thread acceptor;

  // Joins and closes the connections whose peer is done.
  void reap() {
    for (auto it = connections.begin(); it != connections.end();) {
      if (!it->done) {
        ++it;
        continue;
      }
      it->thread.join();
      ::close(it->fd);
      it = connections.erase(it);
    }
  }

  void accept_loop() {
    for (;;) {
      pollfd p[2] = {{listener.fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 && errno != EINTR) return;
      if (p[1].revents) return;
      if (!(p[0].revents & POLLIN)) continue;
      if (active.load() >= kMaxConnections) {  // the rest wait in the backlog
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      const int fd = ::accept4(listener.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      ++active;
      std::lock_guard<std::mutex> lock(mutex);
      reap();
      Connection& c = connections.emplace_back();
      c.fd = fd;
      c.thread = std::thread([this, &c] {
        serve(c.fd);
        --active;
        c.done = true;
      });
    }
  }
};

ProbeServer::ProbeServer(const std::string& host) : impl_(std::make_unique<Impl>()) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const bool any = host.empty() || host == "0.0.0.0";
  if (int rc = ::getaddrinfo(any ? nullptr : host.c_str(), "0", &hints, &found); rc != 0)
    throw std::runtime_error(fmt::format("the link probe cannot resolve {}: {}", host, ::gai_strerror(rc)));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, ::freeaddrinfo);
  std::string error = "no address";
  for (addrinfo* a = found; a && impl_->listener.fd < 0; a = a->ai_next) {
    Fd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0));
    if (fd.fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd.fd, 1024) == 0) impl_->listener = std::move(fd);
    else error = std::strerror(errno);
  }
  if (impl_->listener.fd < 0)
    throw std::runtime_error(fmt::format("the link probe cannot listen on {}: {}", any ? "*" : host, error));
  sockaddr_storage addr{};
  socklen_t len = sizeof addr;
  ::getsockname(impl_->listener.fd, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
  if (::pipe2(impl_->wake, O_CLOEXEC) != 0) throw std::runtime_error("the link probe cannot make a pipe");
  impl_->acceptor = std::thread([impl = impl_.get()] { impl->accept_loop(); });
}

ProbeServer::~ProbeServer() {
  const char quit = 'q';
  [[maybe_unused]] const ssize_t n = ::write(impl_->wake[1], &quit, 1);
  impl_->acceptor.join();
  std::lock_guard<std::mutex> lock(impl_->mutex);
  for (auto& c : impl_->connections) ::shutdown(c.fd, SHUT_RDWR);  // a blocked read returns
  for (auto& c : impl_->connections) {
    c.thread.join();
    ::close(c.fd);
  }
  ::close(impl_->wake[0]);
  ::close(impl_->wake[1]);
}

LinkFigures measure_link(const std::string& host, int port, double ms) {
  LinkFigures f;
  Fd fd = connect_to(host, port, f.error);
  if (fd.fd < 0) return f;
  const auto failed = [&](const char* what) {
    f.error = fmt::format("{}:{} stopped answering during the {}", host, port, what);
    return f;
  };
  std::vector<double> rtts;
  for (int i = 0; i < kPings; ++i) {
    const auto t = Clock::now();
    char c = 'P';
    if (!write_all(fd.fd, &c, 1) || !read_all(fd.fd, &c, 1)) return failed("pings");
    rtts.push_back(seconds_since(t) * 1e6);
  }
  f.rtt_us = median_of(rtts);
  const auto ns = static_cast<uint64_t>(ms * 1e6);
  char c = 'U';
  uint64_t bytes = 0, took = 0;
  if (!write_all(fd.fd, &c, 1) || !send_frames(fd.fd, ns) || !read_u64(fd.fd, bytes) || !read_u64(fd.fd, took))
    return failed("send");
  f.out_mbps = took > 0 ? static_cast<double>(bytes) * 1e3 / static_cast<double>(took) : 0;
  c = 'D';
  if (!write_all(fd.fd, &c, 1) || !write_u64(fd.fd, ns) || !receive_frames(fd.fd, bytes, took))
    return failed("receive");
  f.in_mbps = took > 0 ? static_cast<double>(bytes) * 1e3 / static_cast<double>(took) : 0;
  return f;
}

std::string reach(const std::string& host, int port) {
  std::string error;
  Fd fd = connect_to(host, port, error);
  return fd.fd >= 0 ? "" : error;
}

ClockFigures measure_clock(const std::string& host, int port) {
  ClockFigures f;
  Fd fd = connect_to(host, port, f.error);
  if (fd.fd < 0) return f;
  double best_rtt = 1e18;
  for (int i = 0; i < kClockSamples; ++i) {
    const uint64_t t0 = realtime_ns();
    const auto s = Clock::now();
    char c = 'T';
    uint64_t theirs = 0;
    if (!write_all(fd.fd, &c, 1) || !read_u64(fd.fd, theirs)) {
      f.error = fmt::format("{}:{} stopped answering the clock exchange", host, port);
      return f;
    }
    const double rtt = seconds_since(s);
    if (rtt >= best_rtt) continue;
    best_rtt = rtt;
    const double mid = static_cast<double>(t0) * 1e-9 + rtt / 2;  // our clock when they read theirs
    f.offset_s = static_cast<double>(theirs) * 1e-9 - mid;
    f.rtt_ms = rtt * 1e3;
  }
  return f;
}

}  // namespace ddp::launch::preflight
