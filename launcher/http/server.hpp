// A small read-only HTTP/1.1 server (Boost.Beast) on a BORROWED io_context: it adds no
// thread; its handlers run wherever that loop runs (the Supervisor's). GET and HEAD only;
// one request per connection (Connection: close). Bounded against hostile clients: at most
// max_connections at once (more are closed at accept), a request head of at most
// max_request_bytes, a deadline for the whole request and one for the reply (a client that
// sends garbage gets 400, one that never reads is dropped), so memory stays below
// max_connections x (max_request_bytes + a reply); a failed accept (no file descriptor
// left) pauses accepting for 100 ms instead of spinning. Not thread-safe: use it on the loop's thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "launcher/net/listen_error.hpp"

namespace boost::asio {
class io_context;
}

namespace ddp::launch::http {

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};
// Answers a GET of `target` (the path and query as sent). Must not throw.
using Handler = std::function<Response(const std::string& target)>;

struct ServerLimits {
  size_t max_connections = 32;                      // open at once; the next is closed at accept
  size_t max_request_bytes = 8192;                  // request line + headers; no body is read
  std::chrono::milliseconds request_timeout{5000};  // the whole request must arrive within this
  std::chrono::milliseconds write_timeout{5000};    // the whole reply must be taken within this
};

class Server {
 public:
  // Binds host:port (0: a free one) and starts accepting on `io`. Throws net::ListenError
  // ("[::1]:80: <why>"; address_in_use(): the port is taken).
  Server(boost::asio::io_context& io, const std::string& host, uint16_t port, Handler handler,
         ServerLimits limits = {});
  ~Server();  // closes the listener and every open connection
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  // Counters (for tests and the docs' limits): connections closed at accept for the limit,
  // and connections dropped for a bad or late request or a reply not taken in time.
  size_t refused() const;
  size_t dropped() const;

  struct State;  // the implementation's (server.cpp), shared with its connections

 private:
  std::shared_ptr<State> state_;
};

}  // namespace ddp::launch::http
