#include "launcher/etcd/http_connection.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

namespace ddp::launch::etcd {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

struct HttpConnection::Impl {
  asio::io_context ioc;
  ssl::context* tls = nullptr;
  const std::atomic<bool>* interrupted = nullptr;
  bool abandoned = false;  // interrupted with an operation pending: never run ioc again
  std::unique_ptr<beast::tcp_stream> plain;
  std::unique_ptr<beast::ssl_stream<beast::tcp_stream>> secure;
  beast::flat_buffer buffer;
  std::optional<http::response_parser<http::string_body>> stream;  // the streamed reply
  std::string pending;                                             // its unread bytes

  beast::tcp_stream& lowest() { return secure ? beast::get_lowest_layer(*secure) : *plain; }

  void reset() {
    stream.reset();
    pending.clear();
    buffer.clear();
    secure.reset();
    plain.reset();
  }

  // Runs one asynchronous operation to completion or the deadline; start(stream, handler).
  template <class Start>
  beast::error_code run(Clock::time_point deadline, Start start) {
    if (abandoned) return asio::error::operation_aborted;
    lowest().expires_at(deadline);
    beast::error_code result = asio::error::would_block;
    auto done = [&result](beast::error_code ec, auto&&...) { result = ec; };
    if (secure) start(*secure, done);
    else start(*plain, done);
    return finish(result);
  }

  // Runs the loop until the pending operation has set `result`, looking at `interrupted`.
  beast::error_code finish(const beast::error_code& result) {
    ioc.restart();
    while (result == asio::error::would_block) {
      if (interrupted && interrupted->load()) {
        abandoned = true;  // the handler still refers to `result`: it must never run
        return asio::error::operation_aborted;
      }
      ioc.run_for(kInterruptPoll);
      if (ioc.stopped()) ioc.restart();
    }
    return result;
  }
};

namespace {

std::string describe(const beast::error_code& ec) {
  if (ec == beast::error::timeout) return "timed out";
  return ec.message();
}

template <class Request>
void prepare(Request& req, const Endpoint& e, const std::string& target, const std::string& body,
             const std::string& token) {
  req.method(http::verb::post);
  req.target(target);
  req.version(11);
  req.set(http::field::host, e.text());
  req.set(http::field::content_type, "application/json");
  if (!token.empty()) req.set(http::field::authorization, token);
  req.body() = body;
  req.prepare_payload();
}

}  // namespace

HttpConnection::HttpConnection(Endpoint endpoint, ssl::context* tls, const std::atomic<bool>* interrupted)
    : endpoint_(std::move(endpoint)), impl_(std::make_unique<Impl>()) {
  impl_->tls = tls;
  impl_->interrupted = interrupted;
}

HttpConnection::~HttpConnection() = default;

void HttpConnection::connect(Clock::time_point deadline) {
  Impl& m = *impl_;
  if (m.abandoned) throw ConnectionError("interrupted", false);
  m.reset();
  beast::error_code ec;
  tcp::resolver resolver(m.ioc);
  auto found = resolver.resolve(endpoint_.host, std::to_string(endpoint_.port), ec);
  if (ec) throw ConnectionError("cannot resolve " + endpoint_.host + ": " + ec.message(), false);
  try {
    if (m.tls) m.secure = std::make_unique<beast::ssl_stream<beast::tcp_stream>>(m.ioc, *m.tls);
    else m.plain = std::make_unique<beast::tcp_stream>(m.ioc);
  } catch (const boost::system::system_error& e) {  // SSL_new failed: OpenSSL out of memory
    throw ConnectionError("cannot open a TLS stream to " + endpoint_.text() + ": " + e.what(), false);
  }
  beast::error_code result = m.run(deadline, [&](auto&, auto done) { m.lowest().async_connect(found, done); });
  if (result) {
    m.reset();
    throw ConnectionError("cannot connect to " + endpoint_.text() + ": " + describe(result), false);
  }
  if (!m.secure) return;
  if (!SSL_set_tlsext_host_name(m.secure->native_handle(), endpoint_.host.c_str()))
    throw ConnectionError("cannot set the TLS server name " + endpoint_.host, true);
  m.secure->set_verify_callback(ssl::host_name_verification(endpoint_.host));
  ec = m.run(deadline, [&](auto&, auto done) { m.secure->async_handshake(ssl::stream_base::client, done); });
  if (ec) {
    const bool rejected = ec.category() == asio::error::get_ssl_category() || ec == asio::ssl::error::stream_truncated;
    m.reset();
    throw ConnectionError("TLS handshake with " + endpoint_.text() + " failed: " + describe(ec) +
                              (rejected ? " (check --rdzv-conf cacert=, the CA that signed etcd's certificate, "
                                          "and that the certificate names this host; and cert=/key= if etcd "
                                          "asks for a client certificate)"
                                        : ""),
                          rejected);
  }
}

HttpReply HttpConnection::post(const std::string& target, const std::string& body, const std::string& token,
                               Clock::time_point deadline) {
  Impl& m = *impl_;
  if (!m.plain && !m.secure) connect(deadline);
  http::request<http::string_body> req;
  prepare(req, endpoint_, target, body, token);
  beast::error_code ec = m.run(deadline, [&](auto& s, auto done) { http::async_write(s, req, done); });
  http::response<http::string_body> res;
  if (!ec) ec = m.run(deadline, [&](auto& s, auto done) { http::async_read(s, m.buffer, res, done); });
  if (ec) {
    m.reset();
    throw ConnectionError(endpoint_.text() + ": " + target + " failed: " + describe(ec), false);
  }
  if (!res.keep_alive()) m.reset();
  return {static_cast<int>(res.result_int()), std::move(res.body())};
}

int HttpConnection::post_stream(const std::string& target, const std::string& body, const std::string& token,
                                Clock::time_point deadline, std::string* error_body) {
  Impl& m = *impl_;
  if (!m.plain && !m.secure) connect(deadline);
  http::request<http::string_body> req;
  prepare(req, endpoint_, target, body, token);
  beast::error_code ec = m.run(deadline, [&](auto& s, auto done) { http::async_write(s, req, done); });
  m.stream.emplace();
  m.stream->body_limit(boost::none);
  if (!ec) ec = m.run(deadline, [&](auto& s, auto done) { http::async_read_header(s, m.buffer, *m.stream, done); });
  if (ec) {
    m.reset();
    throw ConnectionError(endpoint_.text() + ": " + target + " failed: " + describe(ec), false);
  }
  const int status = static_cast<int>(m.stream->get().result_int());
  if (status != 200 && error_body) {
    ec = m.run(deadline, [&](auto& s, auto done) { http::async_read(s, m.buffer, *m.stream, done); });
    *error_body = m.stream->get().body();
    m.reset();
  }
  return status;
}

std::optional<std::string> HttpConnection::next_line(Clock::time_point deadline) {
  Impl& m = *impl_;
  for (;;) {
    const size_t nl = m.pending.find('\n');
    if (nl != std::string::npos) {
      std::string line = m.pending.substr(0, nl);
      m.pending.erase(0, nl + 1);
      if (line.find_first_not_of(" \r\t") == std::string::npos) continue;
      return line;
    }
    if (!m.stream || m.stream->is_done()) {
      m.reset();
      throw ConnectionError(endpoint_.text() + " ended the stream", false);
    }
    beast::error_code ec =
        m.run(deadline, [&](auto& s, auto done) { http::async_read_some(s, m.buffer, *m.stream, done); });
    m.pending += m.stream->get().body();
    m.stream->get().body().clear();
    if (ec == beast::error::timeout) {
      m.reset();
      return std::nullopt;
    }
    if (ec && ec != http::error::need_buffer) {
      m.reset();
      throw ConnectionError(endpoint_.text() + ": the stream broke: " + describe(ec), false);
    }
  }
}

}  // namespace ddp::launch::etcd
