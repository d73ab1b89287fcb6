#include "launcher/preflight/link_probe.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "launcher/net/listen.hpp"

namespace ddp::launch::preflight {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr int kPings = 11;
constexpr int kClockSamples = 5;
constexpr uint32_t kFrame = 64 * 1024;
constexpr std::chrono::seconds kIoTimeout{5};  // a peer that does not answer (connect included)

uint64_t realtime_ns() {
  timespec t{};
  ::clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ULL + static_cast<uint64_t>(t.tv_nsec);
}

// u32 and u64 in network byte order.
std::array<unsigned char, 4> be32(uint32_t v) {
  return {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16), static_cast<unsigned char>(v >> 8),
          static_cast<unsigned char>(v)};
}
uint32_t from_be32(const std::array<unsigned char, 4>& b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}
std::array<unsigned char, 8> be64(uint64_t v) {
  std::array<unsigned char, 8> b{};
  for (int i = 7; i >= 0; --i, v >>= 8) b[static_cast<size_t>(i)] = static_cast<unsigned char>(v & 0xff);
  return b;
}
uint64_t from_be64(const std::array<unsigned char, 8>& b) {
  uint64_t v = 0;
  for (unsigned char c : b) v = (v << 8) | c;
  return v;
}

const std::vector<char>& payload() {
  static const std::vector<char> zeros(kFrame, 0);
  return zeros;
}

uint64_t ns_since(Clock::time_point t) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

// One connection of the probe, on the server's loop: commands until the peer closes it, or
// stays silent for kIoTimeout (the deadline moves with every completed read or write).
class ProbeSession : public std::enable_shared_from_this<ProbeSession> {
 public:
  explicit ProbeSession(tcp::socket socket) : socket_(std::move(socket)), deadline_(socket_.get_executor()) {}

  void start() {
    alive();
    watch_deadline();
    next_command();
  }

 private:
  void alive() { deadline_.expires_after(kIoTimeout); }

  void watch_deadline() {
    deadline_.async_wait([this, self = shared_from_this()](const error_code&) {
      if (!socket_.is_open()) return;
      if (deadline_.expiry() > Clock::now()) return watch_deadline();
      error_code ignored;
      socket_.close(ignored);
    });
  }

  void next_command() {
    asio::async_read(socket_, asio::buffer(&command_, 1), [this, self = shared_from_this()](error_code ec, size_t) {
      if (ec) return end();
      alive();
      switch (command_) {
        case 'P': return send(asio::buffer(&command_, 1));
        case 'T': return send_u64(realtime_ns());
        case 'U': return receive_frames(0, std::nullopt);
        case 'D': return read_duration();
        default: return end();
      }
    });
  }

  void send(asio::const_buffer buffer) {
    asio::async_write(socket_, buffer, [this, self = shared_from_this()](error_code ec, size_t) {
      if (ec) return end();
      alive();
      next_command();
    });
  }
  void send_u64(uint64_t v) {
    out_ = be64(v);
    send(asio::buffer(out_));
  }

  // 'U': frames until the end frame; then the payload bytes and the ns from the first on.
  void receive_frames(uint64_t bytes, std::optional<Clock::time_point> first) {
    asio::async_read(
        socket_, asio::buffer(len_), [this, self = shared_from_this(), bytes, first](error_code ec, size_t) {
          if (ec) return end();
          alive();
          const Clock::time_point started = first.value_or(Clock::now());
          const uint32_t len = from_be32(len_);
          if (len == 0) {
            pair_ = {be64(bytes), be64(ns_since(started))};
            return send(asio::buffer(pair_.data(), sizeof pair_));
          }
          if (len > kFrame) return end();
          buffer_.resize(len);
          asio::async_read(socket_, asio::buffer(buffer_), [this, self, bytes, started, len](error_code e, size_t) {
            if (e) return end();
            alive();
            receive_frames(bytes + len, started);
          });
        });
  }

  // 'D': the duration (ns), then frames for that long, then the end frame.
  void read_duration() {
    asio::async_read(socket_, asio::buffer(in_), [this, self = shared_from_this()](error_code ec, size_t) {
      if (ec) return end();
      alive();
      send_frames(Clock::now() + std::chrono::nanoseconds(from_be64(in_)));
    });
  }
  void send_frames(Clock::time_point until) {
    if (Clock::now() >= until) {
      len_ = be32(0);
      return send(asio::buffer(len_));
    }
    len_ = be32(kFrame);
    const std::array<asio::const_buffer, 2> frame{asio::buffer(len_), asio::buffer(payload())};
    asio::async_write(socket_, frame, [this, self = shared_from_this(), until](error_code ec, size_t) {
      if (ec) return end();
      alive();
      send_frames(until);
    });
  }

  void end() {
    error_code ignored;
    socket_.close(ignored);
    deadline_.cancel();
  }

  tcp::socket socket_;
  asio::steady_timer deadline_;
  char command_ = 0;
  std::array<unsigned char, 4> len_{};
  std::array<unsigned char, 8> in_{};
  std::array<unsigned char, 8> out_{};
  std::array<std::array<unsigned char, 8>, 2> pair_{};
  std::vector<char> buffer_;
};

// One blocking connection to a probe, every operation within kIoTimeout (Asio's blocking
// client with timeouts: the operation runs on a private io_context, closed when late).
class Exchange {
 public:
  // Connects to host:port; error says why it could not.
  bool connect(const std::string& host, int port, std::string& error) {
    tcp::resolver resolver(io_);
    tcp::resolver::results_type found;
    error_code ec;
    if (!complete(ec, [&](auto done) {
          resolver.async_resolve(host, std::to_string(port), [&, done](error_code e, auto r) {
            found = r;
            done(e);
          });
        })) {
      error = fmt::format("cannot resolve {}: {}", host, ec ? ec.message() : "no answer within 5 s");
      return false;
    }
    if (!complete(ec, [&](auto done) {
          asio::async_connect(socket_, found, [done](error_code e, const auto&) { done(e); });
        })) {
      error = fmt::format("cannot connect to {}:{}: {}", host, port, ec ? ec.message() : "no answer within 5 s");
      return false;
    }
    socket_.set_option(tcp::no_delay(true), ec);
    return true;
  }

  bool write(const void* data, size_t size) {
    error_code ec;
    return complete(ec, [&](auto done) {
      asio::async_write(socket_, asio::buffer(data, size), [done](error_code e, size_t) { done(e); });
    });
  }
  bool read(void* data, size_t size) {
    error_code ec;
    return complete(ec, [&](auto done) {
      asio::async_read(socket_, asio::buffer(data, size), [done](error_code e, size_t) { done(e); });
    });
  }
  bool write_u64(uint64_t v) {
    const auto b = be64(v);
    return write(b.data(), b.size());
  }
  bool read_u64(uint64_t& v) {
    std::array<unsigned char, 8> b{};
    if (!read(b.data(), b.size())) return false;
    v = from_be64(b);
    return true;
  }

  // Frames for `ns`, then the end frame.
  bool send_frames(uint64_t ns) {
    const auto until = Clock::now() + std::chrono::nanoseconds(ns);
    const auto len = be32(kFrame);
    do {
      if (!write(len.data(), len.size()) || !write(payload().data(), payload().size())) return false;
    } while (Clock::now() < until);
    const auto end = be32(0);
    return write(end.data(), end.size());
  }
  // Frames until the end frame: the payload bytes and the ns from the first byte on.
  bool receive_frames(uint64_t& bytes, uint64_t& ns) {
    std::vector<char> buf(kFrame);
    bytes = 0;
    std::optional<Clock::time_point> first;
    for (;;) {
      std::array<unsigned char, 4> len{};
      if (!read(len.data(), len.size())) return false;
      if (!first) first = Clock::now();
      const uint32_t n = from_be32(len);
      if (n == 0) break;
      if (n > kFrame || !read(buf.data(), n)) return false;
      bytes += n;
    }
    ns = ns_since(*first);
    return true;
  }

 private:
  // Starts an operation (start(done): done(error) when it completes) and runs it to its end
  // or kIoTimeout; a late one is cancelled (the socket closed). True when it succeeded.
  template <class Start>
  bool complete(error_code& ec, Start start) {
    bool finished = false;
    start([&](error_code e) {
      ec = e;
      finished = true;
    });
    io_.restart();
    io_.run_for(kIoTimeout);
    if (!finished) {
      error_code ignored;
      socket_.close(ignored);
      io_.restart();
      io_.run();  // the cancelled operation's handler, while `finished` is alive
      ec = {};
      return false;
    }
    return !ec;
  }

  asio::io_context io_{1};
  tcp::socket socket_{io_};
};

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

struct ProbeServer::Impl {
  explicit Impl(const std::string& host)
      : acceptor(net::listen_acceptor(
            io, {host.empty() ? "0.0.0.0" : host, 0,
                 fmt::format("the link probe cannot listen on {}", host.empty() || host == "0.0.0.0" ? "*" : host), "",
                 true, false, 1024})) {}

  void accept() {
    acceptor.async_accept([this](error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        std::make_shared<ProbeSession>(std::move(socket))->start();
      }
      accept();
    });
  }

  asio::io_context io{1};
  tcp::acceptor acceptor;
  std::thread thread;  // runs io until the destructor stops it
};

ProbeServer::ProbeServer(const std::string& host) : impl_(std::make_unique<Impl>(host)) {
  port_ = impl_->acceptor.local_endpoint().port();
  impl_->accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

ProbeServer::~ProbeServer() {
  impl_->io.stop();  // the sessions' handlers are destroyed with the loop: their sockets close
  impl_->thread.join();
}

LinkFigures measure_link(const std::string& host, int port, double ms) {
  LinkFigures f;
  Exchange x;
  if (!x.connect(host, port, f.error)) return f;
  const auto failed = [&](const char* what) {
    f.error = fmt::format("{}:{} stopped answering during the {}", host, port, what);
    return f;
  };
  std::vector<double> rtts;
  for (int i = 0; i < kPings; ++i) {
    const auto t = Clock::now();
    char c = 'P';
    if (!x.write(&c, 1) || !x.read(&c, 1)) return failed("pings");
    rtts.push_back(seconds_since(t) * 1e6);
  }
  f.rtt_us = median_of(rtts);
  const auto ns = static_cast<uint64_t>(ms * 1e6);
  char c = 'U';
  uint64_t bytes = 0, took = 0;
  if (!x.write(&c, 1) || !x.send_frames(ns) || !x.read_u64(bytes) || !x.read_u64(took)) return failed("send");
  f.out_mbps = took > 0 ? static_cast<double>(bytes) * 1e3 / static_cast<double>(took) : 0;
  c = 'D';
  if (!x.write(&c, 1) || !x.write_u64(ns) || !x.receive_frames(bytes, took)) return failed("receive");
  f.in_mbps = took > 0 ? static_cast<double>(bytes) * 1e3 / static_cast<double>(took) : 0;
  return f;
}

std::string reach(const std::string& host, int port) {
  std::string error;
  Exchange x;
  return x.connect(host, port, error) ? "" : error;
}

ClockFigures measure_clock(const std::string& host, int port) {
  ClockFigures f;
  Exchange x;
  if (!x.connect(host, port, f.error)) return f;
  double best_rtt = 1e18;
  for (int i = 0; i < kClockSamples; ++i) {
    const uint64_t t0 = realtime_ns();
    const auto s = Clock::now();
    char c = 'T';
    uint64_t theirs = 0;
    if (!x.write(&c, 1) || !x.read_u64(theirs)) {
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
