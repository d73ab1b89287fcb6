// c10d_store_crowd: many emulated torch 2.x ranks against one c10d TCPStore server, for the
// store-at-scale test and scripts/bench-store-scale.sh; and, with --floor, the simplest server
// that could answer them (the benchmark's floor). One thread, epoll, non-blocking sockets.
//
// Client: c10d_store_crowd --port P --ranks N [--first R] [--count C] [--shape barrier|init]
//                          [--sources K] [--timeout S]
//   Runs ranks [R, R+C) of a job of N (default: all N), each on its own connection from
//   127.0.0.(1 + rank % K) (K default 1; the kernel picks each source port per destination, so
//   one address holds the ephemeral range per server port; K > 1 spreads them, but torch's
//   server looks up each peer's name, and 127.0.0.2 and up are in no /etc/hosts: every such
//   lookup waits for DNS):
//   barrier: VALIDATE, SET rank/<r>, ADD counter 1 (the rank whose ADD returns N SETs release),
//            WAIT release: c10d's store barrier.
//   init:    VALIDATE, PING, ADD init/ 1, rank 0 SETs the 128-byte NCCL unique id, the others
//            WAIT for it and GET it: init_process_group's use of the store under torch 2.x.
//   A refused or reset connection is counted and retried (10-50 ms later, random) until the
//   timeout. Prints one line: "done D of C refused F reset E start T0 end T1" (unix seconds:
//   the first connect, the last rank released); exits 0 when every rank was released.
// Floor:  c10d_store_crowd --floor [--port P]: prints "port N", serves those requests (keys in
//   a hash map, waiters per key) until stdin closes; no limits, no timers, no checks.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

enum Code : uint8_t { kValidate = 0, kSet = 1, kGet = 3, kAdd = 4, kWait = 6, kPing = 13 };
constexpr uint32_t kMagic = 0x3C85F7CE;
constexpr size_t kUniqueIdBytes = 128;

double now_s() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
void put_bytes(std::string& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out += s;
}

// ---------------------------------------------------------------------------------------------
// The emulated ranks.

struct Rank {
  int rank = 0;
  int fd = -1;
  int phase = 0;        // where its script stands (see advance)
  std::string out;      // bytes still to send
  std::string in;       // bytes received, not yet taken
  double retry_at = 0;  // a refused or reset rank reconnects then
  bool done = false;
};

struct Crowd {
  int epoll = -1;
  uint16_t port = 0;
  int ranks = 0;
  bool init_shape = false;
  int sources = 1;
  double deadline = 0;
  std::vector<Rank> members;
  int done = 0, refused = 0, reset = 0;
  double first_start = 0, last_done = 0;
  std::mt19937 rng{std::random_device{}()};

  void connect_rank(Rank& r) {
    r.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (r.fd < 0) {
      std::perror("c10d_store_crowd: socket");
      std::exit(2);
    }
    int one = 1;
    ::setsockopt(r.fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    ::setsockopt(r.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    src.sin_addr.s_addr = htonl(0x7f000001u + static_cast<uint32_t>(r.rank % sources));
    ::bind(r.fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(port);
    dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (first_start == 0) first_start = now_s();
    if (::connect(r.fd, reinterpret_cast<sockaddr*>(&dst), sizeof dst) != 0 && errno != EINPROGRESS) {
      fail(r, errno == ECONNREFUSED);
      return;
    }
    r.phase = 0;
    r.in.clear();
    r.out.clear();
    advance(r);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;  // edges: every read and write runs to EAGAIN
    ev.data.u32 = static_cast<uint32_t>(&r - members.data());
    ::epoll_ctl(epoll, EPOLL_CTL_ADD, r.fd, &ev);
  }

  void fail(Rank& r, bool was_refused) {
    (was_refused ? refused : reset)++;
    if (r.fd >= 0) ::close(r.fd);
    r.fd = -1;
    r.retry_at = now_s() + std::uniform_real_distribution<double>(0.01, 0.05)(rng);
  }

  // Takes n bytes off the front of r.in if they are there.
  static bool take(Rank& r, size_t n, std::string* into = nullptr) {
    if (r.in.size() < n) return false;
    if (into) *into = r.in.substr(0, n);
    r.in.erase(0, n);
    return true;
  }

  // Runs r's script as far as the bytes received allow; queues what it sends next.
  void advance(Rank& r) {
    for (;;) {
      switch (r.phase) {
        case 0: {  // connected: VALIDATE, then the first requests (SET and VALIDATE have no reply)
          put<uint8_t>(r.out, kValidate);
          put<uint32_t>(r.out, kMagic);
          if (init_shape) {
            put<uint8_t>(r.out, kPing);
            put<uint32_t>(r.out, static_cast<uint32_t>(r.rank));
          } else {
            put<uint8_t>(r.out, kSet);
            put_bytes(r.out, "rank/" + std::to_string(r.rank));
            put_bytes(r.out, std::string(8, 'x'));
          }
          put<uint8_t>(r.out, kAdd);
          put_bytes(r.out, init_shape ? "init/" : "counter");
          put<int64_t>(r.out, 1);
          r.phase = init_shape ? 1 : 2;
          return;
        }
        case 1:  // init: the PING's echo
          if (!take(r, 4)) return;
          r.phase = 2;
          break;
        case 2: {  // the ADD's count
          std::string bytes;
          if (!take(r, 8, &bytes)) return;
          int64_t count = 0;
          std::memcpy(&count, bytes.data(), 8);
          const std::string key = init_shape ? "ncclUniqueId" : "release";
          if ((init_shape && r.rank == 0) || (!init_shape && count == ranks)) {
            put<uint8_t>(r.out, kSet);
            put_bytes(r.out, key);
            put_bytes(r.out, std::string(init_shape ? kUniqueIdBytes : 1, 'u'));
          }
          if (init_shape && r.rank == 0) return finish(r);
          put<uint8_t>(r.out, kWait);
          put<uint64_t>(r.out, 1);
          put_bytes(r.out, key);
          r.phase = 3;
          return;
        }
        case 3:  // WAIT's STOP_WAITING
          if (!take(r, 1)) return;
          if (!init_shape) return finish(r);
          put<uint8_t>(r.out, kGet);
          put_bytes(r.out, "ncclUniqueId");
          r.phase = 4;
          return;
        case 4: {  // GET's value: a u64 length, then the bytes
          if (r.in.size() < 8) return;
          uint64_t n = 0;
          std::memcpy(&n, r.in.data(), 8);
          if (!take(r, 8 + n)) return;
          return finish(r);
        }
        default: return;
      }
    }
  }

  void finish(Rank& r) {
    r.done = true;
    r.phase = 5;
    ++done;
    last_done = now_s();
  }

  void flush(Rank& r) {
    while (!r.out.empty()) {
      const ssize_t n = ::send(r.fd, r.out.data(), r.out.size(), MSG_NOSIGNAL);
      if (n > 0) {
        r.out.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
      return fail(r, errno == ECONNREFUSED);
    }
    if (r.done) {  // released: this rank is gone (as a worker would go on training)
      ::close(r.fd);
      r.fd = -1;
    }
  }

  void on_event(Rank& r, uint32_t events) {
    if (r.fd < 0) return;
    if (events & EPOLLERR) {
      int err = 0;
      socklen_t len = sizeof err;
      ::getsockopt(r.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      return fail(r, err == ECONNREFUSED);
    }
    if (events & EPOLLIN) {
      char buf[4096];
      for (;;) {
        const ssize_t n = ::recv(r.fd, buf, sizeof buf, 0);
        if (n > 0) {
          r.in.append(buf, static_cast<size_t>(n));
          continue;
        }
        if (n == 0) return fail(r, false);  // closed by the server before this rank was released
        if (errno == EAGAIN || errno == EINTR) break;
        return fail(r, errno == ECONNREFUSED);
      }
      advance(r);
    }
    if (r.fd >= 0 && (events & (EPOLLOUT | EPOLLIN))) flush(r);
  }

  int run(int first, int count) {
    epoll = ::epoll_create1(EPOLL_CLOEXEC);
    members.resize(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) members[static_cast<size_t>(i)].rank = first + i;
    for (auto& r : members) connect_rank(r);
    std::vector<epoll_event> events(1024);
    while (done < count && now_s() < deadline) {
      const int n = ::epoll_wait(epoll, events.data(), static_cast<int>(events.size()), 10);
      for (int i = 0; i < n; ++i)
        on_event(members[events[static_cast<size_t>(i)].data.u32], events[static_cast<size_t>(i)].events);
      const double t = now_s();
      for (auto& r : members)
        if (!r.done && r.fd < 0 && r.retry_at <= t) connect_rank(r);
    }
    std::printf("done %d of %d refused %d reset %d start %.6f end %.6f\n", done, count, refused, reset, first_start,
                last_done);
    return done == count ? 0 : 1;
  }
};

// ---------------------------------------------------------------------------------------------
// The floor: the least a server must do to answer the crowd.

struct FloorConn {
  std::string in, out;
};

int serve_floor(uint16_t port) {
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener, 65535) != 0) {
    std::perror("c10d_store_crowd --floor: bind/listen");
    return 2;
  }
  socklen_t len = sizeof addr;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("port %u\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  const int epoll = ::epoll_create1(EPOLL_CLOEXEC);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = listener;
  ::epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &ev);
  ev.data.fd = STDIN_FILENO;
  ::epoll_ctl(epoll, EPOLL_CTL_ADD, STDIN_FILENO, &ev);
  std::unordered_map<int, FloorConn> conns;
  std::unordered_map<std::string, std::string> data;
  std::unordered_map<std::string, std::vector<int>> waiting;
  auto send_to = [&](int fd, const std::string& bytes) {
    auto& c = conns[fd];
    c.out += bytes;
    const ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n > 0) c.out.erase(0, static_cast<size_t>(n));
  };
  auto u64 = [](const std::string& s, size_t at) {
    uint64_t v = 0;
    std::memcpy(&v, s.data() + at, 8);
    return v;
  };
  // One request off the front of c.in; false when it is not all there.
  auto serve_one = [&](int fd, FloorConn& c) -> bool {
    const std::string& s = c.in;
    if (s.empty()) return false;
    const uint8_t code = static_cast<uint8_t>(s[0]);
    auto key_at = [&](size_t at, std::string& key, size_t& next) {
      if (s.size() < at + 8) return false;
      const uint64_t n = u64(s, at);
      if (s.size() < at + 8 + n) return false;
      key = s.substr(at + 8, n);
      next = at + 8 + n;
      return true;
    };
    std::string key, value;
    size_t next = 0;
    switch (code) {
      case kValidate:
      case kPing:
        if (s.size() < 5) return false;
        if (code == kPing) send_to(fd, s.substr(1, 4));
        next = 5;
        break;
      case kSet: {
        size_t after_key = 0;
        if (!key_at(1, key, after_key) || !key_at(after_key, value, next)) return false;
        data[key] = value;
        if (auto w = waiting.find(key); w != waiting.end()) {
          for (int waiter : w->second) send_to(waiter, std::string(1, '\0'));
          waiting.erase(w);
        }
        break;
      }
      case kGet:
        if (!key_at(1, key, next)) return false;
        value.clear();
        put_bytes(value, data[key]);
        send_to(fd, value);
        break;
      case kAdd: {
        size_t after_key = 0;
        if (!key_at(1, key, after_key) || s.size() < after_key + 8) return false;
        int64_t delta = 0, now = 0;
        std::memcpy(&delta, s.data() + after_key, 8);
        auto& v = data[key];
        if (!v.empty()) now = std::stoll(v);
        now += delta;
        v = std::to_string(now);
        std::string reply;
        put<int64_t>(reply, now);
        send_to(fd, reply);
        next = after_key + 8;
        break;
      }
      case kWait: {
        if (s.size() < 9 || u64(s, 1) != 1 || !key_at(9, key, next)) return false;
        if (data.count(key)) send_to(fd, std::string(1, '\0'));
        else waiting[key].push_back(fd);
        break;
      }
      default: std::fprintf(stderr, "c10d_store_crowd --floor: request %u is not served\n", code); std::exit(2);
    }
    c.in.erase(0, next);
    return true;
  };
  std::vector<epoll_event> events(1024);
  for (;;) {
    const int n = ::epoll_wait(epoll, events.data(), static_cast<int>(events.size()), -1);
    for (int i = 0; i < n; ++i) {
      const int fd = events[static_cast<size_t>(i)].data.fd;
      if (fd == STDIN_FILENO) {
        char b[64];
        if (::read(STDIN_FILENO, b, sizeof b) <= 0) return 0;
        continue;
      }
      if (fd == listener) {
        for (int c; (c = ::accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ev.events = EPOLLIN;
          ev.data.fd = c;
          ::epoll_ctl(epoll, EPOLL_CTL_ADD, c, &ev);
          conns[c];
        }
        continue;
      }
      auto& c = conns[fd];
      char buf[4096];
      bool closed = false;
      for (;;) {
        const ssize_t got = ::recv(fd, buf, sizeof buf, 0);
        if (got > 0) {
          c.in.append(buf, static_cast<size_t>(got));
          continue;
        }
        closed = got == 0 || (errno != EAGAIN && errno != EINTR);
        break;
      }
      while (serve_one(fd, c)) {
      }
      if (closed) {
        ::close(fd);
        conns.erase(fd);
      }
    }
  }
}

// The soft open-file limit raised to the hard one (one descriptor per connection).
void raise_open_file_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

}  // namespace

int main(int argc, char** argv) {
  raise_open_file_limit();
  Crowd crowd;
  bool floor = false;
  int first = 0, count = -1;
  double timeout_s = 120;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--floor") floor = true;
    else if (a == "--port") crowd.port = static_cast<uint16_t>(std::stoi(value()));
    else if (a == "--ranks") crowd.ranks = std::stoi(value());
    else if (a == "--first") first = std::stoi(value());
    else if (a == "--count") count = std::stoi(value());
    else if (a == "--sources") crowd.sources = std::max(1, std::stoi(value()));
    else if (a == "--timeout") timeout_s = std::stod(value());
    else if (a == "--shape") {
      const std::string shape = value();
      if (shape != "barrier" && shape != "init") {
        std::fprintf(stderr, "c10d_store_crowd: --shape is barrier or init, got '%s'\n", shape.c_str());
        return 2;
      }
      crowd.init_shape = shape == "init";
    } else {
      std::fprintf(stderr, "c10d_store_crowd: unknown argument '%s' (see the file's head for usage)\n", a.c_str());
      return 2;
    }
  }
  if (floor) return serve_floor(crowd.port);
  if (crowd.port == 0 || crowd.ranks < 1) {
    std::fprintf(stderr, "c10d_store_crowd: need --port P and --ranks N >= 1\n");
    return 2;
  }
  if (count < 0) count = crowd.ranks - first;
  crowd.deadline = now_s() + timeout_s;
  return crowd.run(first, count);
}
