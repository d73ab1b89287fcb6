#include "launcher/store/server.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include <future>
#include <thread>

#include "launcher/store/session.hpp"

namespace ddp::launch::store {

namespace asio = boost::asio;
using asio::ip::tcp;

struct StoreServer::Impl {
  explicit Impl(ServerOptions opts) : options(std::move(opts)), shared(options), acceptor(io) {}

  void do_accept() {
    acceptor.async_accept([this](boost::system::error_code ec, tcp::socket socket) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) {
        auto session = std::make_shared<Session>(std::move(socket), shared);
        shared.sessions.insert(session);
        session->start();
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

  ServerOptions options;
  asio::io_context io{1};  // declared before everything that uses it, destroyed last
  ServerShared shared;
  tcp::acceptor acceptor;
  asio::steady_timer accept_retry{io};
  uint16_t port = 0;
  std::thread thread;
};

StoreServer::StoreServer(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

StoreServer::~StoreServer() { stop(); }

void StoreServer::start() {
  if (impl_->thread.joinable()) return;
  const auto& o = impl_->options;
  const std::string where = fmt::format("{}:{}", o.host, o.port);
  tcp::endpoint endpoint;
  {
    boost::system::error_code ec;
    tcp::resolver resolver(impl_->io);
    auto results = resolver.resolve(o.host, std::to_string(o.port), tcp::resolver::passive, ec);
    if (ec || results.empty())
      throw BindError(fmt::format("cannot listen for the rendezvous store on {}: bad address ({})", where,
                                  ec.message()),
                      false);
    endpoint = results.begin()->endpoint();
  }
  boost::system::error_code ec;
  auto& acc = impl_->acceptor;
  acc.open(endpoint.protocol(), ec);
  if (!ec) acc.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acc.bind(endpoint, ec);
  if (!ec) acc.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    acc.close();
    if (ec == asio::error::address_in_use)
      throw BindError(fmt::format("cannot listen for the rendezvous store on {}: address already in use; "
                                  "another ddp-launch (or other program) holds the port: stop it or "
                                  "choose another port", where),
                      true);
    throw BindError(fmt::format("cannot listen for the rendezvous store on {}: {}", where, ec.message()), false);
  }
  impl_->port = acc.local_endpoint().port();
  impl_->do_accept();
  impl_->thread = std::thread([impl = impl_.get()] { impl->io.run(); });
}

uint16_t StoreServer::port() const { return impl_->port; }

void StoreServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  // Everything is closed on the server thread; the loop then runs out of work and returns.
  asio::post(impl_->io, [impl = impl_.get()] {
    impl->shared.stopping = true;
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
    impl->accept_retry.cancel();
    auto sessions = impl->shared.sessions;  // close() erases from the set
    for (auto& s : sessions) s->close("server stopping");
  });
  impl_->thread.join();
}

}  // namespace ddp::launch::store
