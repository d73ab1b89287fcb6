#include "launcher/store/tcp_connection.hpp"

namespace ddp::launch::store {

namespace {

constexpr std::chrono::milliseconds kGiveUpPoll{100};  // how often a retrying connect asks give_up_connecting

// The connection dropped (reset, EOF, a send or read that missed its deadline, bytes
// that are not our protocol). During connect() it is retried until connect_timeout: a
// store that is starting up or whose accept backlog is full resets new connections, and
// nothing was asked of it yet. After the handshake the client reconnects within its
// reconnect window and retries the request where that is safe (ClientOptions).
struct ConnectionLost : StoreUnavailable {
  using StoreUnavailable::StoreUnavailable;
};

bool waits(Op op) { return op == Op::kGet || op == Op::kWait || op == Op::kMultiGet; }

// Safe to send again when its first sending may or may not have been applied.
bool retryable(Op op) { return op != Op::kDelete && op != Op::kAdd; }

}  // namespace

Response TcpStoreClient::Connection::call(Request q) {
  if (q.op == Op::kAdd && options_.reconnect_window.count() > 0 && !options_.name.empty()) {
    q.op = Op::kAddOnce;
    q.values = {std::to_string(++request_id_)};
  }
  const auto started = call_started_ = Clock::now();
  const uint32_t wait_ms = q.timeout_ms;
  for (;;) {
    if (interrupted_) give_up("interrupted");
    if (broken_) reconnect();
    try {
      Response r = call_once(q);
      if (r.op == Op::kAddOnce) r.op = Op::kAdd;
      return r;
    } catch (const ConnectionLost&) {
      if (interrupted_) give_up("interrupted");
      if (options_.reconnect_window.count() == 0 || !retryable(q.op)) throw;
    }
    if (waits(q.op)) {
      const auto spent = std::chrono::duration_cast<Duration>(Clock::now() - started).count();
      q.timeout_ms = static_cast<uint32_t>(std::max<int64_t>(0, int64_t{wait_ms} - spent));
    }
  }
}

void TcpStoreClient::Connection::close(bool graceful) {
  if (final_) return;
  if (graceful && !interrupted_) {
    try {
      Request bye;
      bye.op = Op::kGoodbye;
      call(bye);
    } catch (const StoreError&) {  // best effort: closing anyway, the server notices EOF too
    }
  }
  final_ = broken_ = true;
  broken_why_ = fmt::format("the connection to the rendezvous store at {} was closed", endpoint_);
  boost::system::error_code ignored;
  socket_.close(ignored);
}

void TcpStoreClient::Connection::interrupt() {
  interrupted_ = true;
  asio::post(io_, [this] {
    boost::system::error_code ignored;
    socket_.cancel(ignored);
  });
}

Response TcpStoreClient::Connection::call_once(const Request& q) {
  send(encode_request(q), Clock::now() + options_.request_timeout);
  const auto deadline = Clock::now() + options_.request_timeout + std::chrono::milliseconds(q.timeout_ms);
  for (;;) {
    Response r = receive(deadline, q.op);
    if (r.op == Op::kPing && q.op != Op::kPing && r.status == Status::kOk) continue;  // our own pings
    if (r.status == Status::kError) {
      if (r.op != q.op) lost("the store closed the connection: " + r.message);
      throw StoreError(fmt::format("the rendezvous store at {} refused {}: {}", endpoint_, op_name(q.op), r.message));
    }
    if (r.op != q.op) lost(fmt::format("protocol error: a {} reply to a {} request", op_name(r.op), op_name(q.op)));
    return r;
  }
}

[[noreturn]] void TcpStoreClient::Connection::give_up(const std::string& why) {
  final_ = broken_ = true;
  broken_why_ = fmt::format("the connection to the rendezvous store at {} was {}", endpoint_, why);
  boost::system::error_code ignored;
  socket_.close(ignored);
  throw StoreUnavailable(broken_why_);
}

void TcpStoreClient::Connection::reconnect() {
  if (final_ || options_.reconnect_window.count() == 0) throw StoreUnavailable(broken_why_);
  const std::string first = broken_why_;
  try {
    connect(lost_since_ + options_.reconnect_window, true);
  } catch (const StoreUnavailable& e) {
    final_ = true;
    broken_why_ = fmt::format("{}; reconnecting failed: {}", first, e.what());
    throw StoreUnavailable(broken_why_);
  }
}

void TcpStoreClient::Connection::connect(Clock::time_point deadline, bool reconnecting) {
  if (!reconnecting) deadline = Clock::now() + options_.connect_timeout;
  net::Backoff backoff(std::chrono::milliseconds(20), std::chrono::milliseconds(1000));
  std::string last;
  for (;;) {
    bool refused = false;
    bool unknown_host = false;
    try {
      if (connect_once(deadline, last, refused, unknown_host)) {
        handshake();
        lost_since_ = {};
        return;
      }
    } catch (const ConnectionLost& e) {  // retried: see ConnectionLost
      last = e.what();
    }
    boost::system::error_code ignored;
    socket_.close(ignored);
    if (interrupted_) give_up("interrupted");
    if (unknown_host)
      throw StoreUnavailable(
          fmt::format("{}; pass the store's host as an address or a name every node "
                      "resolves (--master-addr / --rdzv-endpoint)",
                      last));
    if (reconnecting && refused) throw StoreUnavailable(last + " (nobody listens: the store is gone)");
    if (!reconnecting && gives_up(refused)) throw StoreUnavailable(last);
    const auto pause = backoff.next();
    if (Clock::now() + pause >= deadline) {
      if (reconnecting)
        throw StoreUnavailable(fmt::format("not back within {}: {}", seconds(options_.reconnect_window), last));
      throw StoreUnavailable(
          fmt::format("cannot reach the rendezvous store at {} after {}: {}; is node 0's ddp-launch running, and is "
                      "the address right?",
                      endpoint_, seconds(options_.connect_timeout), last));
    }
    for (const auto until = Clock::now() + pause; Clock::now() < until;) {
      if (!reconnecting && gives_up(refused)) throw StoreUnavailable(last);
      std::this_thread::sleep_for(std::min<Clock::duration>(kGiveUpPoll, until - Clock::now()));
    }
  }
}

bool TcpStoreClient::Connection::connect_once(Clock::time_point deadline, std::string& why, bool& refused,
                                              bool& unknown_host) {
  boost::system::error_code ec;
  tcp::resolver resolver(io_);
  auto endpoints = resolver.resolve(host_, std::to_string(port_), ec);
  if (ec) {
    why = fmt::format("cannot resolve '{}': {}", host_, ec.message());
    unknown_host = ec == asio::error::host_not_found;
    return false;
  }
  socket_ = tcp::socket(io_);
  bool done = false;
  asio::async_connect(socket_, endpoints, [&](boost::system::error_code e, const tcp::endpoint&) {
    ec = e;
    done = true;
  });
  if (!run_until([&] { return done; }, deadline)) {
    socket_.close(ec);
    run_until([&] { return done; }, Clock::now() + std::chrono::seconds(1));
    why = "connection timed out";
    return false;
  }
  if (ec) {
    why = ec.message();
    refused = ec == asio::error::connection_refused;
    return false;
  }
  socket_.set_option(tcp::no_delay(true), ec);
  decoder_ = FrameDecoder();
  read_pending_ = false;
  broken_ = false;
  return true;
}

void TcpStoreClient::Connection::handshake() {
  const auto deadline = Clock::now() + options_.request_timeout;
  Greeting g;
  try {
    g = decode_greeting(receive_frame(deadline, false, Op::kHello));
  } catch (const ProtocolError& e) {
    fail_handshake(fmt::format("{} is not a ddp-launch rendezvous store ({})", endpoint_, e.what()));
  }
  if (g.version != kProtocolVersion)
    fail_handshake(
        fmt::format("the rendezvous store at {} speaks protocol version {}, we speak {}; run the "
                    "same ddp-launch version on every node",
                    endpoint_, g.version, kProtocolVersion));
  if (g.auth_required && options_.token.empty())
    fail_handshake(
        fmt::format("the rendezvous store at {} requires a token; pass the job's token with "
                    "--rdzv-conf token=... or DDP_LAUNCH_RDZV_TOKEN",
                    endpoint_));
  Hello h;
  h.proof = options_.token.empty() ? "" : hmac_sha256(options_.token, g.nonce);
  h.name = options_.name;
  h.heartbeat_ms = options_.heartbeat_timeout_ms;
  send(encode_hello(h), deadline);
  Response r;
  try {
    r = decode_response(receive_frame(deadline, false, Op::kHello));
  } catch (const ProtocolError& e) {
    fail_handshake(fmt::format("bad handshake reply from {}: {}", endpoint_, e.what()));
  }
  if (r.status != Status::kOk)
    fail_handshake(fmt::format("the rendezvous store at {} rejected us: {}", endpoint_, r.message));
}

[[noreturn]] void TcpStoreClient::Connection::fail_handshake(const std::string& why) {
  final_ = broken_ = true;
  broken_why_ = why;
  boost::system::error_code ignored;
  socket_.close(ignored);
  throw StoreUnavailable(why);
}

bool TcpStoreClient::Connection::run_until(const std::function<bool()>& done, Clock::time_point deadline) {
  while (!done()) {
    if (io_.stopped()) io_.restart();
    if (io_.run_one_until(deadline) == 0 && (Clock::now() >= deadline || io_.stopped())) return done();
  }
  return true;
}

void TcpStoreClient::Connection::send(const std::string& frame, Clock::time_point deadline) {
  bool done = false;
  boost::system::error_code ec;
  asio::async_write(socket_, asio::buffer(frame), [&](boost::system::error_code e, size_t) {
    ec = e;
    done = true;
  });
  if (!run_until([&] { return done; }, deadline)) {
    boost::system::error_code ignored;
    socket_.close(ignored);
    run_until([&] { return done; }, Clock::now() + std::chrono::seconds(1));
    lost(fmt::format("could not send within {}", seconds(options_.request_timeout)));
  }
  if (ec) lost(ec.message());
}

Response TcpStoreClient::Connection::receive(Clock::time_point deadline, Op op) {
  try {
    return decode_response(receive_frame(deadline, options_.heartbeat_timeout_ms > 0, op));
  } catch (const ProtocolError& e) {
    lost(e.what());
  }
}

std::string TcpStoreClient::Connection::receive_frame(Clock::time_point deadline, bool pinging, Op op) {
  const auto interval = std::chrono::milliseconds(std::max<uint32_t>(options_.heartbeat_timeout_ms / 3, 10));
  auto next_ping = pinging ? Clock::now() + interval : Clock::time_point::max();
  for (;;) {
    if (auto frame = decoder_.next()) return std::move(*frame);
    if (!read_pending_) start_read();
    run_until([&] { return !read_pending_; }, std::min(deadline, next_ping));
    if (!read_pending_) {
      if (!read_error_.empty()) lost(read_error_);
      continue;
    }
    if (Clock::now() >= deadline) {
      lost(fmt::format("no reply to {} in time (request timeout {})", op_name(op), seconds(options_.request_timeout)));
    }
    Request ping;
    ping.op = Op::kPing;
    send(encode_request(ping), deadline);
    next_ping = Clock::now() + interval;
  }
}

void TcpStoreClient::Connection::start_read() {
  read_pending_ = true;
  read_error_.clear();
  socket_.async_read_some(asio::buffer(buf_), [this](boost::system::error_code ec, size_t n) {
    read_pending_ = false;
    if (ec) {
      read_error_ = ec == asio::error::eof ? "the store closed the connection" : ec.message();
      return;
    }
    last_heard_ = Clock::now();
    try {
      decoder_.feed(buf_.data(), n);
    } catch (const ProtocolError& e) {  // kept for receive_frame, which calls lost() with it
      read_error_ = e.what();
    }
  });
}

[[noreturn]] void TcpStoreClient::Connection::lost(const std::string& why) {
  boost::system::error_code ignored;
  socket_.close(ignored);
  if (read_pending_) run_until([&] { return !read_pending_; }, Clock::now() + std::chrono::seconds(1));
  broken_ = true;
  // The window counts from the last sign of life we could expect: bytes heard, or this
  // call's start (an idle connection may have been closed by the server meanwhile).
  if (lost_since_ == Clock::time_point{}) lost_since_ = std::max(last_heard_, call_started_);
  broken_why_ = fmt::format(
      "lost the connection to the rendezvous store at {}: {}; is node 0's ddp-launch "
      "still running?",
      endpoint_, why);
  throw ConnectionLost(broken_why_);
}

}  // namespace ddp::launch::store
