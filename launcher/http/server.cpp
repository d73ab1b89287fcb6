// Server as State (the acceptor, the limits, the counters; shared with every session so a
// session's last handler may run after the Server is gone) and Session (one connection:
// read one request head under its deadline, answer it, close).
#include "launcher/http/server.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "launcher/net/listen.hpp"

namespace ddp::launch::http {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = asio::ip::tcp;

namespace {
class Session;
}

struct Server::State {
  State(asio::io_context& io, Handler h, ServerLimits l) : acceptor(io), retry(io), handler(std::move(h)), limits(l) {}
  tcp::acceptor acceptor;
  asio::steady_timer retry;  // after a failed accept (EMFILE...): a pause, not a busy loop
  Handler handler;
  ServerLimits limits;
  bool closed = false;
  size_t active = 0;
  size_t refused = 0;
  size_t dropped = 0;
  std::vector<std::weak_ptr<Session>> sessions;  // to close them with the server
};

namespace {

Response plain(int status, std::string text) { return {status, "text/plain; charset=utf-8", std::move(text) + "\n"}; }

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<Server::State> state)
      : stream_(std::move(socket)), state_(std::move(state)), buffer_(state_->limits.max_request_bytes) {
    ++state_->active;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(state_->limits.max_request_bytes));
    parser_->body_limit(0);
  }
  ~Session() { --state_->active; }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() {
    stream_.expires_after(state_->limits.request_timeout);
    bhttp::async_read(stream_, buffer_, *parser_,
                      [self = shared_from_this()](beast::error_code ec, size_t) { self->on_read(ec); });
  }

  void close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

 private:
  void on_read(beast::error_code ec) {
    if (state_->closed) return;
    if (ec == beast::error::timeout || ec == bhttp::error::end_of_stream || ec == asio::error::eof ||
        ec == asio::error::connection_reset || ec == asio::error::operation_aborted) {
      ++state_->dropped;  // silent, late or gone: nothing to answer
      return close();
    }
    if (ec) {
      ++state_->dropped;
      return reply(plain(ec == bhttp::error::header_limit ? 431 : 400,
                         ec == bhttp::error::header_limit ? "request head too large" : "bad request"),
                   false);
    }
    const auto& request = parser_->get();
    if (request.method() != bhttp::verb::get) return reply(plain(405, "read-only: GET only"), false);
    Response r;
    try {
      r = state_->handler(std::string(request.target()));
    } catch (const std::exception& e) {  // a handler must not throw; if it does, the client gets 500
      r = plain(500, e.what());
    }
    reply(std::move(r), true);
  }

  void reply(Response r, bool ok) {
    response_.version(11);
    response_.result(static_cast<unsigned>(r.status));
    response_.set(bhttp::field::server, "ddp-launch");
    response_.set(bhttp::field::content_type, r.content_type);
    response_.set(bhttp::field::cache_control, "no-store");
    response_.keep_alive(false);
    response_.body() = std::move(r.body);
    response_.prepare_payload();
    stream_.expires_after(state_->limits.write_timeout);
    bhttp::async_write(stream_, response_, [self = shared_from_this(), ok](beast::error_code ec, size_t) {
      if (ec && ok && !self->state_->closed) ++self->state_->dropped;  // the client did not take it in time
      self->close();
    });
  }

  beast::tcp_stream stream_;
  std::shared_ptr<Server::State> state_;
  beast::flat_buffer buffer_;  // grows to at most max_request_bytes
  std::optional<bhttp::request_parser<bhttp::empty_body>> parser_;
  bhttp::response<bhttp::string_body> response_;
};

void accept(const std::shared_ptr<Server::State>& state) {
  state->acceptor.async_accept([state](beast::error_code ec, tcp::socket socket) {
    if (state->closed) return;
    if (!ec) {
      if (state->active >= state->limits.max_connections) {
        ++state->refused;  // the limit: closed at once, so a flood costs one accept each
        beast::error_code ignored;
        socket.close(ignored);
      } else {
        auto session = std::make_shared<Session>(std::move(socket), state);
        auto& s = state->sessions;
        s.erase(std::remove_if(s.begin(), s.end(), [](const std::weak_ptr<Session>& w) { return w.expired(); }),
                s.end());
        s.push_back(session);
        session->start();
      }
    }
    if (ec) {  // EMFILE and the like: try again in a moment rather than spin on the loop
      state->retry.expires_after(std::chrono::milliseconds(100));
      state->retry.async_wait([state](beast::error_code) {
        if (!state->closed) accept(state);
      });
      return;
    }
    accept(state);
  });
}

}  // namespace

Server::Server(asio::io_context& io, const std::string& host, uint16_t port, Handler handler, ServerLimits limits)
    : state_(std::make_shared<State>(io, std::move(handler), limits)) {
  net::ListenSpec spec;
  spec.host = host;
  spec.port = port;
  state_->acceptor = net::listen_acceptor(io, spec);
  accept(state_);
}

Server::~Server() {
  state_->closed = true;
  beast::error_code ignored;
  state_->acceptor.close(ignored);
  state_->retry.cancel();
  for (auto& weak : state_->sessions)
    if (auto session = weak.lock()) session->close();
}

uint16_t Server::port() const { return state_->acceptor.local_endpoint().port(); }
size_t Server::refused() const { return state_->refused; }
size_t Server::dropped() const { return state_->dropped; }

}  // namespace ddp::launch::http
