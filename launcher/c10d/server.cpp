#include "launcher/c10d/server.hpp"

#include <array>
#include <atomic>
#include <deque>
#include <thread>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "launcher/c10d/key_space.hpp"
#include "launcher/net/endpoint.hpp"
#include "launcher/net/listen.hpp"

namespace ddp::launch::c10d {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr size_t kReadChunk = 64 * 1024;
constexpr size_t kMaxWriteBacklog = 8u << 20;  // stop reading a client that does not take its replies
}  // namespace

bool peer_allowed(const std::string& remote_ip, const std::string& local_ip, const std::vector<std::string>& allowed) {
  boost::system::error_code ec;
  const auto remote = net::unmapped(asio::ip::make_address(remote_ip, ec));
  if (ec) return false;
  if (remote.is_loopback()) return true;
  const auto local = net::unmapped(asio::ip::make_address(local_ip, ec));
  if (!ec && remote == local) return true;
  for (const auto& a : allowed) {
    const auto ip = asio::ip::make_address(a, ec);
    if (!ec && net::unmapped(ip) == remote) return true;
  }
  return false;
}

class Connection;

struct Shared {
  explicit Shared(ServerOptions o) : options(std::move(o)) {}
  void log(const std::string& line) const {
    if (options.log) options.log("workers' store: " + line);
  }
  ServerOptions options;
  std::array<char, kReadChunk> read_buffer{};  // every connection's reads land here first
  KeySpace space;
  std::unordered_map<ConnId, std::shared_ptr<Connection>> connections;
  std::vector<std::string> allowed;  // the round's nodes' addresses (restrict_peers)
  ConnId next_id = 1;
  bool stopping = false;
  std::atomic<size_t> refused{0};
};

// One client: reads into the decoder, serves each complete request on the key space, and
// writes replies in order, one write in flight.
class Connection : public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, Shared& shared, ConnId id, tcp::endpoint peer)
      : socket_(std::move(socket)),
        shared_(shared),
        id_(id),
        peer_(peer),
        decoder_(shared.options.limits),
        request_deadline_(socket_.get_executor()),
        write_deadline_(socket_.get_executor()) {
    boost::system::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    socket_.non_blocking(true, ec);  // do_read's read_some never blocks the loop
  }

  void start() { do_read(); }

  // A reply goes out at once when nothing is queued before it and the socket takes it (the
  // usual case: no deadline to arm, no trip through the loop); the rest waits its turn.
  void send(std::string bytes) {
    if (closed_) return;
    if (writes_.empty()) {
      boost::system::error_code ec;
      const size_t n = socket_.write_some(asio::buffer(bytes), ec);
      if (!ec && n == bytes.size()) return;
      if (!ec) bytes.erase(0, n);  // an error: the queued write below meets it again and says so
    }
    backlog_ += bytes.size();
    writes_.push_back(std::move(bytes));
    if (writes_.size() == 1) do_write();
  }

  // reason empty: an ordinary end (EOF, the server stopping): nothing is logged.
  void close(const std::string& reason) {
    if (closed_) return;
    closed_ = true;
    if (!reason.empty()) shared_.log(fmt::format("closed the connection from {}: {}", who(), reason));
    shared_.space.disconnect(id_);
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    request_deadline_.cancel();
    write_deadline_.cancel();
    shared_.connections.erase(id_);  // may destroy *this once the handlers in flight return
  }

 private:
  std::string who() const {
    const Dialect d = decoder_.dialect();
    const std::string peer = net::endpoint_text(peer_);  // written only when said: most never are
    return d == Dialect::kUnknown ? peer : fmt::format("{} ({} client)", peer, dialect_name(d));
  }

  // Waits until the socket is readable, then reads what is there into the server's one read
  // buffer (one thread: nothing else reads meanwhile): a connection holds no read buffer of
  // its own, only the bytes of a request not yet complete (its decoder's).
  void do_read() {
    if (closed_ || reading_) return;
    if (backlog_ > kMaxWriteBacklog) return;  // resumed when the writes drain
    reading_ = true;
    socket_.async_wait(tcp::socket::wait_read, [self = shared_from_this()](boost::system::error_code ec) {
      self->reading_ = false;
      if (self->closed_) return;
      size_t n = 0;
      if (!ec) n = self->socket_.read_some(asio::buffer(self->shared_.read_buffer), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) return self->do_read();
      if (ec) {
        self->close(ec == asio::error::eof || ec == asio::error::connection_reset ||
                            ec == asio::error::operation_aborted
                        ? ""
                        : fmt::format("read failed: {}", ec.message()));
        return;
      }
      self->decoder_.feed(self->shared_.read_buffer.data(), n);
      self->serve_requests();
      self->do_read();
    });
  }

  void serve_requests() {
    Request r;
    std::vector<Outgoing> out;
    for (;;) {
      const auto status = decoder_.next(r);
      if (status == Decoder::Status::kError) {
        close(decoder_.error());
        return;
      }
      if (status == Decoder::Status::kNeedMore) break;
      out.clear();
      const std::optional<std::string> refused = shared_.space.apply(id_, r, out);
      for (auto& o : out) {
        if (o.to == id_) {
          send(std::move(o.bytes));
        } else if (auto it = shared_.connections.find(o.to); it != shared_.connections.end()) {
          it->second->send(std::move(o.bytes));
        }
      }
      if (refused) {
        close(*refused);
        return;
      }
    }
    arm_request_deadline();
  }

  // A request begun (some of its bytes buffered) must be finished in time; an idle
  // connection (nothing buffered) may stay open as long as it likes.
  void arm_request_deadline() {
    if (decoder_.buffered() == 0) {
      if (request_armed_) request_deadline_.cancel();
      request_armed_ = false;
      return;
    }
    if (request_armed_) return;
    request_armed_ = true;
    request_deadline_.expires_after(shared_.options.request_timeout);
    request_deadline_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (ec || self->closed_ || !self->request_armed_) return;
      self->close(
          fmt::format("a request was still incomplete after {} ms ({} bytes of it arrived); is this a "
                      "c10d TCPStore client?",
                      self->shared_.options.request_timeout.count(), self->decoder_.buffered()));
    });
  }

  void do_write() {
    write_deadline_.expires_after(shared_.options.write_timeout);
    write_deadline_.async_wait([self = shared_from_this(), serial = ++write_serial_](boost::system::error_code ec) {
      if (ec || self->closed_ || serial != self->write_serial_ || self->writes_.empty()) return;
      self->close(fmt::format("a reply was not taken within {} ms", self->shared_.options.write_timeout.count()));
    });
    asio::async_write(socket_, asio::buffer(writes_.front()),
                      [self = shared_from_this()](boost::system::error_code ec, size_t) {
                        if (self->closed_) return;
                        if (ec) {
                          self->close(ec == asio::error::broken_pipe || ec == asio::error::connection_reset
                                          ? ""
                                          : fmt::format("write failed: {}", ec.message()));
                          return;
                        }
                        self->backlog_ -= self->writes_.front().size();
                        self->writes_.pop_front();
                        ++self->write_serial_;
                        self->write_deadline_.cancel();
                        if (!self->writes_.empty()) self->do_write();
                        self->do_read();
                      });
  }

  tcp::socket socket_;
  Shared& shared_;
  ConnId id_;
  tcp::endpoint peer_;
  Decoder decoder_;
  std::deque<std::string> writes_;
  size_t backlog_ = 0;
  uint64_t write_serial_ = 0;
  asio::steady_timer request_deadline_;
  asio::steady_timer write_deadline_;
  bool request_armed_ = false;
  bool reading_ = false;
  bool closed_ = false;
};

struct Server::Impl {
  explicit Impl(ServerOptions o) : shared(std::move(o)), acceptor(io) {}

  // The peer's address came with the accept; the local one is looked up only to restrict peers.
  bool admitted(const tcp::socket& s, const tcp::endpoint& peer) {
    if (shared.connections.size() >= shared.options.max_connections) {
      shared.log(fmt::format("refused a connection from {}: {} connections are open, the limit",
                             net::endpoint_text(peer), shared.options.max_connections));
      return false;
    }
    if (!shared.options.restrict_peers) return true;
    boost::system::error_code ec;
    const auto local = net::unmapped(s.local_endpoint(ec).address());
    if (ec) return false;
    if (peer_allowed(net::unmapped(peer.address()).to_string(), local.to_string(), shared.allowed)) return true;
    shared.log(
        fmt::format("refused a connection from {}: not one of this round's nodes (a rendezvous token is set, "
                    "and c10d clients cannot authenticate)",
                    net::endpoint_text(peer)));
    return false;
  }

  void do_accept() {
    acceptor.async_accept(accepted_peer, [this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || shared.stopping || !acceptor.is_open()) return;
      if (ec) {  // e.g. out of file descriptors: pause instead of spinning
        shared.log(fmt::format("accept failed: {}", ec.message()));
        retry.expires_after(std::chrono::milliseconds(100));
        retry.async_wait([this](boost::system::error_code e) {
          if (!e && !shared.stopping) do_accept();
        });
        return;
      }
      if (admitted(socket, accepted_peer)) {
        const ConnId id = shared.next_id++;
        auto c = std::make_shared<Connection>(std::move(socket), shared, id, accepted_peer);
        shared.connections.emplace(id, c);
        c->start();
      } else {
        ++shared.refused;
        boost::system::error_code ignored;
        socket.close(ignored);
      }
      do_accept();
    });
  }

  asio::io_context io{1};
  Shared shared;
  tcp::acceptor acceptor;
  asio::steady_timer retry{io};
  tcp::endpoint accepted_peer;  // where the accept in flight writes its peer's address
  uint16_t port = 0;
  std::string address;  // what listen() bound: "::" (dual-stack), "0.0.0.0", or the host asked for
  bool listening = false;
  std::thread thread;
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() { stop(); }

void Server::listen() {
  if (impl_->listening) return;
  const auto& o = impl_->shared.options;
  net::ListenSpec spec;
  spec.host = o.host;
  spec.port = o.port;
  spec.where = fmt::format("cannot listen for the workers' store on {}:{}", o.host, o.port);
  spec.in_use_advice = "another program holds the port: stop it or choose another --master-port";
  spec.dual_stack_wildcard = true;
  spec.backlog = o.backlog;
  impl_->acceptor = net::listen_acceptor(impl_->io, spec);
  const tcp::endpoint bound = impl_->acceptor.local_endpoint();
  impl_->port = bound.port();
  impl_->address = bound.address().to_string();
  impl_->listening = true;
}

void Server::serve(const std::vector<std::string>& allowed_hosts) {
  if (impl_->thread.joinable()) return;
  listen();
  if (impl_->shared.options.restrict_peers) {
    tcp::resolver resolver(impl_->io);
    for (const auto& host : allowed_hosts) {
      boost::system::error_code ec;
      auto results = resolver.resolve(host, "", ec);
      if (ec)
        impl_->shared.log(
            fmt::format("cannot resolve node address '{}' ({}): its workers will be refused", host, ec.message()));
      for (const auto& r : results) impl_->shared.allowed.push_back(net::unmapped(r.endpoint().address()).to_string());
    }
  }
  impl_->do_accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

uint16_t Server::port() const { return impl_->port; }

std::string Server::listen_address() const { return impl_->address; }

size_t Server::connections_refused() const { return impl_->shared.refused.load(); }

void Server::stop() {
  if (!impl_) return;
  auto shutdown = [impl = impl_.get()] {
    impl->shared.stopping = true;
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    impl->retry.cancel();
    auto open = impl->shared.connections;  // close() erases from the map
    for (auto& [id, c] : open) c->close("");
  };
  if (impl_->thread.joinable()) {
    asio::post(impl_->io, shutdown);
    impl_->thread.join();
  } else {
    shutdown();
  }
  impl_->listening = false;
}

}  // namespace ddp::launch::c10d
