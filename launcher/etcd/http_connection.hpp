// One HTTP/1.1 connection to one etcd member, plain or TLS (Boost.Beast), for the v3 JSON
// gateway: unary POSTs, and one streamed POST (a watch) whose reply is read line by line.
// Every call blocks on the connection's private io_context until done or its deadline; a
// deadline that passes closes the connection. `interrupted` (optional, set from another
// thread) ends a blocked call within kInterruptPoll; the connection is then unusable.
// Throws ConnectionError (an EtcdError, etcd_error.hpp); not thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "launcher/etcd/etcd_codec.hpp"
#include "launcher/etcd/etcd_error.hpp"

namespace boost::asio::ssl {
class context;
}

namespace ddp::launch::etcd {

using Clock = std::chrono::steady_clock;

inline constexpr std::chrono::milliseconds kInterruptPoll{100};

struct HttpReply {
  int status = 0;
  std::string body;
};

class HttpConnection {
 public:
  // tls: the client context (CA, certificate), or nullptr for plain HTTP. Not owned.
  HttpConnection(Endpoint endpoint, boost::asio::ssl::context* tls, const std::atomic<bool>* interrupted = nullptr);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void connect(Clock::time_point deadline);
  HttpReply post(const std::string& target, const std::string& body, const std::string& token,
                 Clock::time_point deadline);
  // Sends a POST whose reply streams; returns its status (the body is read by next_line;
  // an error status's body is returned whole in *error_body).
  int post_stream(const std::string& target, const std::string& body, const std::string& token,
                  Clock::time_point deadline, std::string* error_body);
  // The stream's next line; nullopt when the deadline passed first (the connection is then
  // closed). Throws ConnectionError when the stream ends or breaks.
  std::optional<std::string> next_line(Clock::time_point deadline);
  const Endpoint& endpoint() const { return endpoint_; }

 private:
  struct Impl;
  Endpoint endpoint_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::launch::etcd
