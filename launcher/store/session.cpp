#include "launcher/store/session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <fmt/format.h>

#include "launcher/net/endpoint.hpp"
#include "launcher/store/hmac.hpp"

namespace ddp::launch::store {

namespace asio = boost::asio;
using Clock = asio::steady_timer::clock_type;

namespace {
constexpr size_t kMaxQueued = 1024;  // requests pipelined behind a parked one

Response error_reply(Op op, std::string message) {
  Response r;
  r.op = op;
  r.status = Status::kError;
  r.message = std::move(message);
  return r;
}

size_t request_bytes(const Request& q) {
  size_t n = 0;
  for (const auto& k : q.keys) n += k.size();
  for (const auto& v : q.values) n += v.size();
  return n;
}

std::string reply_too_large(uint64_t bytes, uint32_t limit) {
  return fmt::format(
      "the reply would be {} bytes, over the store's frame limit of {} bytes; ask for fewer "
      "or smaller values per request",
      bytes, limit);
}
}  // namespace

Session::Session(asio::ip::tcp::socket socket, ServerShared& shared)
    : socket_(std::move(socket)),
      shared_(shared),
      serial_(shared.next_serial++),
      decoder_(shared.options.max_frame_bytes, kMaxHelloFrameBytes),
      read_deadline_(socket_.get_executor()),
      write_deadline_(socket_.get_executor()),
      heartbeat_(socket_.get_executor()),
      wait_timer_(socket_.get_executor()) {
  boost::system::error_code ec;
  auto ep = socket_.remote_endpoint(ec);
  peer_ = ec ? "?" : net::endpoint_text(ep);
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  socket_.non_blocking(true, ec);  // reads and the first try of a write never block the thread
}

std::string Session::who() const { return name_.empty() ? peer_ : fmt::format("'{}' ({})", name_, peer_); }

void Session::start() {
  Greeting g;
  g.auth_required = !shared_.options.token.empty();
  g.nonce = nonce_ = random_bytes(kNonceBytes);
  send_now_or_queue(encode_greeting(g));
  read_deadline_.expires_after(shared_.options.read_timeout);  // HELLO must come in time
  read_deadline_armed_ = true;
  write_deadline_.expires_at(Clock::time_point::max());
  heartbeat_.expires_at(Clock::time_point::max());
  watch_read_deadline();
  watch_write_deadline();
  do_read();
}

void Session::close(const std::string& reason) {
  if (state_ == State::kClosed) return;
  const bool ready = state_ == State::kReady || state_ == State::kClosing;
  state_ = State::kClosed;
  if (parked_) shared_.table.unpark(waiter_);
  boost::system::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  read_deadline_.cancel();
  write_deadline_.cancel();
  heartbeat_.cancel();
  wait_timer_.cancel();
  if (ready && !name_.empty() && heartbeat_ms_ > 0) forget_name(reason);
  shared_.sessions.erase(shared_from_this());
}

void Session::forget_name(const std::string& reason) {
  auto live = shared_.live_names.find(name_);
  if (live != shared_.live_names.end() && --live->second == 0) shared_.live_names.erase(live);
  if (goodbye_ || shared_.stopping) return;
  if (shared_.live_names.count(name_)) {  // it reconnected before this connection was noticed dead
    shared_.log(fmt::format("store: client {}: an old connection closed ({}); a newer one is open", who(), reason));
    return;
  }
  if (broken_) return drop_later(reason);
  shared_.log(fmt::format("store: client {} dropped: {}", who(), reason));
  shared_.last_add_once.erase(name_);
  shared_.mark_dropped(name_, reason);
}

// The connection broke, the client may be alive: it has heartbeat_ms to reconnect
// (on_hello cancels this) before it is dropped.
void Session::drop_later(const std::string& reason) {
  shared_.log(fmt::format("store: client {}: connection broken ({}); dropped unless it reconnects within {} ms", who(),
                          reason, heartbeat_ms_));
  auto timer = std::make_shared<asio::steady_timer>(socket_.get_executor());
  timer->expires_after(std::chrono::milliseconds(heartbeat_ms_));
  shared_.pending_drops[name_] = timer;
  ServerShared& shared = shared_;
  const std::string name = name_;
  const std::string why = reason + fmt::format(", not back within {} ms", heartbeat_ms_);
  timer->async_wait([&shared, name, why, timer](boost::system::error_code ec) {
    auto it = shared.pending_drops.find(name);
    if (ec || it == shared.pending_drops.end() || it->second != timer) return;
    shared.pending_drops.erase(it);
    if (shared.stopping || shared.live_names.count(name)) return;
    shared.log(fmt::format("store: client '{}' dropped: {}", name, why));
    shared.last_add_once.erase(name);
    shared.mark_dropped(name, why);
  });
}

// Runs what can run while the client takes its replies: requests queued behind a finished
// wait, then frames already buffered; then reads more. A backlog of unread replies stops
// all three until a write completes (which calls pump() again).
void Session::pump() {
  run_queued();
  while (open() && !backlogged()) {
    auto frame = decoder_.next();
    if (!frame) break;
    on_frame(*frame);
  }
  if (!open() || backlogged() || reading_) return;
  update_read_deadline();
  do_read();
}

// Waits until the socket is readable, then reads what is there into the server's one buffer.
void Session::do_read() {
  auto self = shared_from_this();
  reading_ = true;
  socket_.async_wait(asio::ip::tcp::socket::wait_read, [this, self](boost::system::error_code ec) {
    reading_ = false;
    if (!open()) return;
    size_t n = 0;
    if (!ec) n = socket_.read_some(asio::buffer(shared_.read_buffer), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) return do_read();
    if (ec) {
      const bool plain = ec == asio::error::eof || ec == asio::error::connection_reset;
      broken_ = ec != asio::error::eof;
      close(plain ? "connection lost" : "connection lost: " + ec.message());
      return;
    }
    try {
      decoder_.feed(shared_.read_buffer.data(), n);
    } catch (const ProtocolError& e) {
      shared_.log(fmt::format("store: closing {}: {}", who(), e.what()));
      if (state_ == State::kReady) reply_and_close(error_reply(Op::kPing, e.what()));
      else close(e.what());
      return;
    }
    pump();
  });
}

void Session::on_frame(const std::string& payload) {
  if (state_ == State::kHandshake) return on_hello(payload);
  if (heartbeat_ms_ > 0) heartbeat_.expires_after(std::chrono::milliseconds(heartbeat_ms_));
  auto& cache = shared_.multi_get_cache;
  if (!parked_ && queued_.empty() && !payload.empty() && payload[0] == static_cast<char>(Op::kMultiGet) &&
      cache.generation == shared_.table.generation() && !cache.frame.empty() && payload == cache.request)
    return send_frame(cache.frame);
  Request q;
  try {
    q = decode_request(payload);
  } catch (const ProtocolError& e) {
    shared_.log(fmt::format("store: closing {}: {}", who(), e.what()));
    return reply_and_close(error_reply(Op::kPing, e.what()));
  }
  if (q.op == Op::kPing) {  // answered at once, even behind a parked request
    Response r;
    r.op = Op::kPing;
    return reply(std::move(r));
  }
  if (parked_ || !queued_.empty()) {
    if (queued_.size() >= kMaxQueued || queued_bytes_ + request_bytes(q) > shared_.options.max_frame_bytes)
      return reply_and_close(error_reply(q.op, "too many pipelined requests"));
    queued_bytes_ += request_bytes(q);
    queued_.push_back(std::move(q));
    return;
  }
  running_payload_ = &payload;
  run(q);
  running_payload_ = nullptr;
}

// Nothing but this frame is looked at before the proof checks out; bytes the client
// pipelined behind a rejected HELLO stay unread in the decoder and die with it.
void Session::on_hello(const std::string& payload) {
  Hello h;
  try {
    h = decode_hello(payload);
  } catch (const ProtocolError& e) {  // not our protocol: close without a word
    shared_.log(fmt::format("store: closing {}: {}", who(), e.what()));
    return close(e.what());
  }
  if (h.version != kProtocolVersion) {
    shared_.log(fmt::format("store: rejected {}: protocol version {}", who(), h.version));
    return reply_and_close(error_reply(
        Op::kHello, fmt::format("protocol version {} is not supported by this store (it speaks {}); run the "
                                "same ddp-launch version on every node",
                                h.version, kProtocolVersion)));
  }
  const std::string& token = shared_.options.token;
  if (!token.empty() && !constant_time_equal(h.proof, hmac_sha256(token, nonce_))) {
    shared_.log(fmt::format("store: rejected {}: wrong or missing token", who()));
    return reply_and_close(
        error_reply(Op::kHello,
                    "authentication failed: the store's token differs from ours (--rdzv-conf token=... "
                    "or DDP_LAUNCH_RDZV_TOKEN must match node 0's)"));
  }
  name_ = h.name;
  heartbeat_ms_ = h.heartbeat_ms;
  state_ = State::kReady;
  if (!name_.empty() && heartbeat_ms_ > 0) {
    ++shared_.live_names[name_];
    if (auto it = shared_.pending_drops.find(name_); it != shared_.pending_drops.end()) {
      it->second->cancel();
      shared_.pending_drops.erase(it);
      shared_.log(fmt::format("store: client {} reconnected", who()));
    }
  }
  Response ok;
  ok.op = Op::kHello;
  reply(std::move(ok));
  if (heartbeat_ms_ > 0) {
    heartbeat_.expires_after(std::chrono::milliseconds(heartbeat_ms_));
    watch_heartbeat();
  }
}

void Session::run_queued() {
  while (state_ == State::kReady && !parked_ && !queued_.empty() && !backlogged()) {
    Request q = std::move(queued_.front());
    queued_.pop_front();
    queued_bytes_ -= request_bytes(q);
    run(q);
  }
}

bool Session::run(const Request& q) {
  KeyTable& t = shared_.table;
  Response r;
  r.op = q.op;
  try {
    switch (q.op) {
      case Op::kSet: t.set(q.keys[0], q.values[0]); break;
      case Op::kAdd: r.number = t.add(q.keys[0], q.delta); break;
      case Op::kAddOnce: r.number = add_once(q); break;
      case Op::kCompareSet: r.values = {t.compare_set(q.keys[0], q.values[0], q.values[1])}; break;
      case Op::kCheck: r.flag = t.missing(q.keys).empty(); break;
      case Op::kDelete: r.flag = t.erase(q.keys[0]); break;
      case Op::kMultiSet:
        for (size_t i = 0; i < q.keys.size(); ++i) t.set(q.keys[i], q.values[i]);
        break;
      case Op::kTryGet:
        if (const std::string* v = t.find(q.keys[0])) {
          r.flag = true;
          r.values = {*v};
        }
        break;
      case Op::kGoodbye:
        goodbye_ = true;
        reply_and_close(std::move(r));
        return true;
      case Op::kGet:
      case Op::kWait:
      case Op::kMultiGet: return serve_or_park(q);
      case Op::kHello:
      case Op::kPing: break;  // HELLO cannot get here; PING never queues
    }
  } catch (const StoreError& e) {  // e.g. ADD on a value that is not an integer
    r = error_reply(q.op, e.what());
  }
  reply(std::move(r));
  return true;
}

// GET, MULTI_GET and WAIT: answered at once when every key exists (a MULTI_GET's reply is
// cached for the next identical frame) or the request does not wait; otherwise parked until
// the keys arrive or the request's own timeout (on_wait_done). False: parked.
bool Session::serve_or_park(const Request& q) {
  KeyTable& t = shared_.table;
  Response r;
  r.op = q.op;
  std::vector<const std::string*> found;
  if (t.find_all(q.keys, found)) {
    if (q.op != Op::kWait) {
      std::string frame = found_reply(q, found);
      if (q.op == Op::kMultiGet && running_payload_) {
        auto& cache = shared_.multi_get_cache;
        cache.generation = t.generation();
        cache.request = *running_payload_;
        cache.frame = frame;
      }
      send_frame(std::move(frame));
      return true;
    }
  } else if (q.timeout_ms == 0) {
    r.status = Status::kTimeout;
    r.values = t.missing(q.keys);
  } else {
    park(q);
    return false;
  }
  reply(std::move(r));
  return true;
}

// Waits for q's keys or q's own timeout, whichever comes first (on_wait_done).
void Session::park(const Request& q) {
  parked_ = q;
  const uint64_t gen = ++wait_generation_;
  auto self = shared_from_this();
  waiter_ = shared_.table.park(q.keys, [this, self, gen] {
    asio::post(socket_.get_executor(), [this, self, gen] { on_wait_done(gen, false); });
  });
  wait_timer_.expires_after(std::chrono::milliseconds(q.timeout_ms));
  wait_timer_.async_wait([this, self, gen](boost::system::error_code ec) {
    if (!ec) on_wait_done(gen, true);
  });
}

// ADD, applied once per (client name, request id): a retry after a reconnect gets the first
// result. Only the last id per name is kept (a client retries only its last request).
int64_t Session::add_once(const Request& q) {
  if (name_.empty()) return shared_.table.add(q.keys[0], q.delta);
  auto& last = shared_.last_add_once[name_];
  if (!last.first.empty() && last.first == q.values[0]) return last.second;
  const int64_t result = shared_.table.add(q.keys[0], q.delta);
  last = {q.values[0], result};
  return result;
}

void Session::on_wait_done(uint64_t generation, bool timed_out) {
  if (state_ != State::kReady || !parked_ || generation != wait_generation_) return;
  KeyTable& t = shared_.table;
  Request q = std::move(*parked_);
  parked_.reset();
  ++wait_generation_;
  wait_timer_.cancel();
  t.unpark(waiter_);
  Response r;
  r.op = q.op;
  std::vector<const std::string*> found;
  if (t.find_all(q.keys, found)) {
    if (q.op != Op::kWait) {
      send_frame(found_reply(q, found));
      run_queued();
      return;
    }
  } else if (timed_out) {
    r.status = Status::kTimeout;
    r.values = t.missing(q.keys);
  } else {  // woken, but a key was deleted since: wait on (the timer restarts; rare)
    run(q);
    return;
  }
  reply(std::move(r));
  run_queued();
}

// Sized before anything is copied: a reply over the frame limit is an error, never built.
std::string Session::found_reply(const Request& q, const std::vector<const std::string*>& values) const {
  uint64_t bytes = encoded_size(Response{}) + 4 * values.size();
  for (const std::string* v : values) bytes += v->size();
  if (bytes > uint64_t{shared_.options.max_frame_bytes} + kFrameHeaderBytes)
    return encode_response(error_reply(q.op, reply_too_large(bytes, shared_.options.max_frame_bytes)));
  return encode_values_reply(q.op, values);
}

void Session::send_frame(std::string frame) {
  if (!open()) return;
  send_now_or_queue(std::move(frame));
}

void Session::reply(Response response) {
  if (!open()) return;
  const size_t bytes = encoded_size(response);
  if (bytes > size_t{shared_.options.max_frame_bytes} + kFrameHeaderBytes)  // a backstop: found_reply sizes first
    response = error_reply(response.op, reply_too_large(bytes, shared_.options.max_frame_bytes));
  send_now_or_queue(encode_response(response));
}

void Session::send_now_or_queue(std::string frame) {
  if (writes_.empty()) {
    boost::system::error_code ec;
    const size_t n = socket_.write_some(asio::buffer(frame), ec);
    if (!ec && n == frame.size()) return;
    if (!ec) frame.erase(0, n);  // on an error the queued write meets it and closes (never from here)
  }
  write_bytes_ += frame.size();
  writes_.push_back(std::move(frame));
  if (writes_.size() == 1) do_write();
}

void Session::reply_and_close(Response response) {
  closing_reason_ = response.status == Status::kError ? response.message : "goodbye";
  reply(std::move(response));
  state_ = State::kClosing;
  if (writes_.empty()) close(closing_reason_);
}

void Session::do_write() {
  auto self = shared_from_this();
  write_deadline_.expires_after(shared_.options.write_timeout);
  asio::async_write(socket_, asio::buffer(writes_.front()), [this, self](boost::system::error_code ec, size_t) {
    if (state_ == State::kClosed) return;
    if (ec) {
      broken_ = true;
      return close("connection lost: " + ec.message());
    }
    write_bytes_ -= writes_.front().size();
    writes_.pop_front();
    if (!writes_.empty()) do_write();
    else write_deadline_.expires_at(Clock::time_point::max());
    if (state_ == State::kClosing && writes_.empty()) return close(closing_reason_);
    pump();  // resumes reading if a backlog held it
  });
}

}  // namespace ddp::launch::store
