// Session: one client connection of the StoreServer (Asio's server + session pattern).
// It greets, checks HELLO (nothing else is decoded before the proof checks out), then
// runs requests in order; a waiting request is parked in the KeyTable while PINGs keep
// being answered. One write in flight; deadlines on HELLO, on finishing a started frame,
// on each write, and on heartbeat silence. Bounded: a tiny first frame, replies within the
// frame limit, and no new request is read while the replies queued for the client exceed
// the write backlog (backpressure). Lives on the server thread only.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include <array>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "launcher/store/codec.hpp"
#include "launcher/store/key_table.hpp"
#include "launcher/store/server.hpp"

namespace ddp::launch::store {

class Session;

// What the sessions of one server share (owned by the server, on its thread).
struct ServerShared {
  explicit ServerShared(const ServerOptions& opts) : options(opts) {}
  const ServerOptions& options;
  KeyTable table;
  // Every session reads into this one buffer (one thread: nothing else reads meanwhile); a
  // session keeps only the bytes of a frame not yet complete (its decoder's).
  std::array<char, 64 * 1024> read_buffer{};
  std::set<std::shared_ptr<Session>> sessions;
  uint64_t next_serial = 0;  // accept order, to find the oldest connection
  bool stopping = false;
  // Named heartbeating clients: their open connections, the drop deferred after a lost
  // connection (cancelled when the client reconnects in time), their last ADD_ONCE (id,
  // result).
  std::unordered_map<std::string, int> live_names;
  std::unordered_map<std::string, std::shared_ptr<boost::asio::steady_timer>> pending_drops;
  std::unordered_map<std::string, std::pair<std::string, int64_t>> last_add_once;
  // The last MULTI_GET answered at once: its request bytes and reply frame, valid while
  // the table's generation holds (K agents reading the same K keys: one lookup pass).
  struct {
    uint64_t generation = 0;
    std::string request;
    std::string frame;
  } multi_get_cache;
  // __dropped__/<name> = why, and one more in __dropped_count__.
  void mark_dropped(const std::string& name, const std::string& why) {
    table.set(kDroppedPrefix + name, why);
    table.add(kDroppedCountKey, 1);
  }
  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(boost::asio::ip::tcp::socket socket, ServerShared& shared);
  void start();
  bool authenticated() const { return state_ != State::kHandshake; }
  uint64_t serial() const { return serial_; }
  // Closes the connection; a named heartbeating client that did not say GOODBYE gets
  // __dropped__/<name> = reason (unless the server is stopping or another connection of
  // the same name is open): at once when it closed the connection itself (EOF: its process
  // exited) or fell silent, but only after heartbeat_ms, and only if it has not reconnected
  // by then, when the connection broke (reset, error: maybe the network).
  void close(const std::string& reason);

 private:
  enum class State { kHandshake, kReady, kClosing, kClosed };

  bool open() const { return state_ == State::kHandshake || state_ == State::kReady; }
  bool backlogged() const { return write_bytes_ >= shared_.options.max_write_backlog_bytes; }
  void pump();
  void do_read();
  void on_frame(const std::string& payload);
  void on_hello(const std::string& payload);
  void run_queued();
  bool run(const Request& request);            // false: parked
  bool serve_or_park(const Request& request);  // GET, MULTI_GET, WAIT; false: parked
  void park(const Request& request);
  void on_wait_done(uint64_t generation, bool timed_out);
  int64_t add_once(const Request& request);
  void forget_name(const std::string& reason);
  void drop_later(const std::string& reason);
  // GET / MULTI_GET whose keys all exist (`values` from KeyTable::find_all): the reply's
  // frame, encoded straight from the table, or an ERROR frame if it would be too large.
  std::string found_reply(const Request& request, const std::vector<const std::string*>& values) const;
  void send_frame(std::string frame);
  void reply(Response response);
  void reply_and_close(Response response);
  // Sends a frame: at once, as much as the socket takes, when nothing else is queued (the usual
  // case: the whole reply, no timer, no trip through the loop); the rest is queued for
  // do_write, under the write deadline.
  void send_now_or_queue(std::string frame);
  void do_write();
  void update_read_deadline();
  void watch_read_deadline();
  void watch_write_deadline();
  void watch_heartbeat();
  std::string who() const;

  boost::asio::ip::tcp::socket socket_;
  ServerShared& shared_;
  uint64_t serial_;
  std::string peer_;
  FrameDecoder decoder_;
  std::deque<std::string> writes_;  // front is in flight
  size_t write_bytes_ = 0;          // bytes in writes_
  bool reading_ = false;            // a read is in flight
  State state_ = State::kHandshake;
  std::string nonce_;
  std::string name_;
  uint32_t heartbeat_ms_ = 0;
  bool goodbye_ = false;
  bool broken_ = false;                           // the connection failed (reset, error), as opposed to EOF or silence
  std::string closing_reason_;                    // why, once the last reply is written (kClosing)
  const std::string* running_payload_ = nullptr;  // the frame run() is answering, if fresh

  std::deque<Request> queued_;     // requests behind a parked one
  size_t queued_bytes_ = 0;        // their keys and values
  std::optional<Request> parked_;  // the waiting request, if any
  KeyTable::WaiterId waiter_ = 0;
  uint64_t wait_generation_ = 0;  // tells a stale wake-up or timer from the current one

  boost::asio::steady_timer read_deadline_;
  bool read_deadline_armed_ = false;
  boost::asio::steady_timer write_deadline_;
  boost::asio::steady_timer heartbeat_;
  boost::asio::steady_timer wait_timer_;
};

}  // namespace ddp::launch::store
