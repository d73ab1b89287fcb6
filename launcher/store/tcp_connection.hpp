// TcpStoreClient::Connection: one authenticated connection to the store and the private
// io_context that drives it (blocking calls with deadlines, reconnection within the client's
// window, heartbeats while a call waits). Internal to tcp_client.cpp and tcp_connection.cpp.
#pragma once

#include "launcher/store/tcp_client.hpp"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <functional>
#include <limits>
#include <thread>

#include "launcher/net/backoff.hpp"
#include "launcher/store/codec.hpp"
#include "launcher/store/hmac.hpp"

namespace ddp::launch::store {

namespace asio = boost::asio;
using asio::ip::tcp;
using Clock = std::chrono::steady_clock;

// A duration as the messages say it ("2.5 s"), and as the wire carries it (ms, clamped).
inline std::string seconds(Duration d) { return fmt::format("{:g} s", static_cast<double>(d.count()) / 1000.0); }
inline uint32_t to_wire_ms(Duration d) {
  return static_cast<uint32_t>(std::clamp<int64_t>(d.count(), 0, std::numeric_limits<uint32_t>::max()));
}

class TcpStoreClient::Connection {
 public:
  Connection(std::string host, uint16_t port, ClientOptions options)
      : host_(std::move(host)),
        port_(port),
        options_(std::move(options)),
        endpoint_(host_.find(':') != std::string::npos ? fmt::format("[{}]:{}", host_, port_)
                                                       : fmt::format("{}:{}", host_, port_)) {
    if (options_.name.size() > kMaxNameBytes)
      throw StoreError(fmt::format("store client name of {} bytes is longer than the {} allowed", options_.name.size(),
                                   kMaxNameBytes));
    connect();
  }

  // Sends q and returns its reply; reconnects and retries (see ClientOptions).
  Response call(Request q);

  void close(bool graceful);

  // Any thread: the posted handler runs on the owner's thread, inside its next run_until.
  void interrupt();

  const std::string& endpoint() const { return endpoint_; }

 private:
  Response call_once(const Request& q);

  [[noreturn]] void give_up(const std::string& why);

  // After a loss: connect again until the reconnect window (from the loss) has passed;
  // a refused connection, a rejection or the window's end is final.
  void reconnect();

  // Retries refused or reset connections with backoff until connect_timeout (the first
  // connection) or the deadline given (a reconnect: a refused one is final at once). A host
  // name the resolver says does not exist is final at once too (a typo or an unresolvable
  // node name does not fix itself; a temporary resolver failure is retried).
  void connect(Clock::time_point deadline = {}, bool reconnecting = false);

  bool gives_up(bool refused) const { return options_.give_up_connecting && options_.give_up_connecting(refused); }

  bool connect_once(Clock::time_point deadline, std::string& why, bool& refused, bool& unknown_host);

  void handshake();

  [[noreturn]] void fail_handshake(const std::string& why);

  // Runs the private loop until done() or the deadline; false on the deadline.
  bool run_until(const std::function<bool()>& done, Clock::time_point deadline);

  void send(const std::string& frame, Clock::time_point deadline);

  Response receive(Clock::time_point deadline, Op op);

  // The next whole frame; PINGs every heartbeat/3 while it waits, if asked to.
  std::string receive_frame(Clock::time_point deadline, bool pinging, Op op);

  void start_read();

  [[noreturn]] void lost(const std::string& why);

  std::string host_;
  uint16_t port_;
  ClientOptions options_;
  std::string endpoint_;
  asio::io_context io_{1};
  tcp::socket socket_{io_};
  FrameDecoder decoder_;
  std::array<char, 64 * 1024> buf_{};
  bool read_pending_ = false;
  std::string read_error_;
  bool broken_ = false;  // no usable connection now
  bool final_ = false;   // and none will be made: closed, rejected, interrupted, or not back in time
  std::string broken_why_;
  Clock::time_point lost_since_{};               // the last sign of life before the current loss ({}: connected)
  Clock::time_point last_heard_ = Clock::now();  // when bytes last arrived
  Clock::time_point call_started_{};             // when the current (or last) call began
  uint64_t request_id_ = 0;                      // ADD_ONCE ids
  std::atomic<bool> interrupted_{false};
};

}  // namespace ddp::launch::store
