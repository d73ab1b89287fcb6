#include "launcher/store/server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <thread>

#include "launcher/net/endpoint.hpp"
#include "launcher/net/listen.hpp"
#include "launcher/net/open_files.hpp"
#include "launcher/store/session.hpp"

namespace ddp::launch::store {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
constexpr size_t kReservedFds = 64;  // for the launcher's own files, pipes and workers
}  // namespace

struct StoreServer::Impl {
  explicit Impl(ServerOptions opts) : options(std::move(opts)), shared(options), acceptor(io) {}

  void do_accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        if (make_room()) {
          auto session = std::make_shared<Session>(std::move(socket), shared);
          shared.sessions.insert(session);
          session->start();
        }
        do_accept();
      } else {  // e.g. out of file descriptors: pause instead of spinning
        shared.log(fmt::format("store: accept failed: {}", ec.message()));
        accept_retry.expires_after(std::chrono::milliseconds(100));
        accept_retry.async_wait([this](boost::system::error_code e) {
          if (!e && acceptor.is_open()) do_accept();
        });
      }
    });
  }

  // At the connection cap, closes the oldest unauthenticated connection; false (refuse the
  // new one) when every connection is authenticated.
  bool make_room() {
    if (shared.sessions.size() < max_connections) return true;
    std::shared_ptr<Session> oldest;
    for (const auto& s : shared.sessions)
      if (!s->authenticated() && (!oldest || s->serial() < oldest->serial())) oldest = s;
    const auto why = fmt::format("store: {} connections open (the limit)", max_connections);
    if (!oldest) {
      shared.log(why + ", all authenticated: refusing a new connection");
      return false;
    }
    shared.log(why + ": closing the oldest unauthenticated one");
    oldest->close("connection limit: the oldest unauthenticated connection is closed");
    return true;
  }

  ServerOptions options;
  size_t max_connections = 0;
  asio::io_context io{1};  // declared before everything that uses it, destroyed last
  ServerShared shared;
  tcp::acceptor acceptor;
  asio::steady_timer accept_retry{io};
  uint16_t port = 0;
  std::string listen_address;
  std::thread thread;
};

StoreServer::StoreServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

StoreServer::~StoreServer() { stop(); }

void StoreServer::start() {
  if (impl_->thread.joinable()) return;
  const auto& o = impl_->options;
  net::ListenSpec spec;
  spec.host = o.host;
  spec.port = o.port;
  spec.where = fmt::format("cannot listen for the rendezvous store on {}:{}", o.host, o.port);
  spec.in_use_advice = "another ddp-launch (or other program) holds the port: stop it or choose another port";
  spec.resolve_names = true;
  spec.backlog = o.backlog;
  impl_->acceptor = net::listen_acceptor(impl_->io, spec);
  const auto bound = impl_->acceptor.local_endpoint();
  impl_->port = bound.port();
  impl_->listen_address = net::endpoint_text(bound);
  const size_t fds = net::raise_open_file_limit();
  impl_->max_connections =
      std::max<size_t>(1, std::min(o.max_connections, fds > 2 * kReservedFds ? fds - kReservedFds : fds / 2));
  impl_->do_accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

uint16_t StoreServer::port() const { return impl_->port; }

std::string StoreServer::listen_address() const { return impl_->listen_address; }

size_t StoreServer::max_connections() const { return impl_->max_connections; }

void StoreServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  // Everything is closed on the server thread; the loop then runs out of work and returns.
  asio::post(impl_->io, [impl = impl_.get()] {
    impl->shared.stopping = true;
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    impl->accept_retry.cancel();
    for (auto& [name, timer] : impl->shared.pending_drops) timer->cancel();
    impl->shared.pending_drops.clear();
    auto sessions = impl->shared.sessions;  // close() erases from the set
    for (auto& s : sessions) s->close("server stopping");
  });
  impl_->thread.join();
}

}  // namespace ddp::launch::store
