#include "launcher/etcd/etcd_client.hpp"

#include <algorithm>
#include <thread>

#include <boost/asio/ssl/context.hpp>
#include <fmt/format.h>

namespace ddp::launch::etcd {
namespace {

namespace ssl = boost::asio::ssl;

constexpr std::chrono::milliseconds kRoundPause{200};  // after every member failed once
constexpr std::chrono::milliseconds kWatchPause{100};  // after a watch broke

// Internal: call() and watch_change() catch them. EtcdErrors, as everything this layer throws.
// The member answered but cannot serve now (no leader, shutting down): try another.
struct MemberUnavailable : EtcdError {
  using EtcdError::EtcdError;
};
// The auth token expired (etcd's simple tokens do): authenticate again.
struct TokenExpired : EtcdError {
  using EtcdError::EtcdError;
};

bool mentions(const std::string& text, const char* what) { return text.find(what) != std::string::npos; }

void pause_until(Clock::time_point deadline, std::chrono::milliseconds most) {
  const auto left = deadline - Clock::now();
  if (left > Clock::duration::zero()) std::this_thread::sleep_for(std::min<Clock::duration>(left, most));
}

}  // namespace

struct EtcdClient::Tls {
  ssl::context context{ssl::context::tls_client};
};

EtcdClient::EtcdClient(EtcdOptions options) : options_(std::move(options)) {
  if (options_.endpoints.empty()) throw EtcdRejected("no etcd endpoint given");
  if (!options_.tls) return;
  try {
    tls_ = std::make_unique<Tls>();
    tls_->context.set_verify_mode(ssl::verify_peer);
    if (options_.cacert.empty()) tls_->context.set_default_verify_paths();
  } catch (const std::exception& e) {  // boost::system::system_error: OpenSSL cannot start, no system CAs
    const char* which = options_.cacert.empty() ? " with the system's CA certificates (--rdzv-conf cacert=)" : "";
    throw EtcdRejected(fmt::format("cannot set up TLS{}: {}", which, e.what()));
  }
  auto load = [](const std::string& what, const std::string& path, auto action) {
    try {
      action();
    } catch (const std::exception& e) {
      throw EtcdRejected(fmt::format("cannot load the {} '{}' (--rdzv-conf): {}", what, path, e.what()));
    }
  };
  ssl::context& ctx = tls_->context;
  if (!options_.cacert.empty())
    load("CA certificate cacert=", options_.cacert, [&] { ctx.load_verify_file(options_.cacert); });
  if (options_.cert.empty() != options_.key.empty())
    throw EtcdRejected("--rdzv-conf cert= and key= go together: the client certificate and its private key");
  if (!options_.cert.empty()) {
    load("client certificate cert=", options_.cert, [&] { ctx.use_certificate_chain_file(options_.cert); });
    load("client key key=", options_.key, [&] { ctx.use_private_key_file(options_.key, ssl::context::pem); });
  }
}

EtcdClient::~EtcdClient() = default;

std::string EtcdClient::endpoints_text() const { return etcd::endpoints_text(options_.endpoints); }

std::string EtcdClient::current_endpoint() const { return options_.endpoints[current_].text(); }

void EtcdClient::authenticate(HttpConnection& conn, Clock::time_point deadline) {
  HttpReply reply =
      conn.post("/v3/auth/authenticate", authenticate_body(options_.username, options_.password), "", deadline);
  if (reply.status == 200) {
    token_ = parse_token(reply.body);
    return;
  }
  ErrorReply err = parse_error(reply.body);
  if (mentions(err.message, "authentication is not enabled")) return;  // nothing to prove
  if (err.code == kCodeUnavailable) throw MemberUnavailable(err.message);
  throw EtcdRejected(
      fmt::format("etcd at {} rejected user '{}': {}; check --rdzv-conf username= and the password "
                  "(DDP_LAUNCH_ETCD_PASSWORD, or --rdzv-conf password_file=)",
                  conn.endpoint().text(), options_.username, err.message));
}

HttpConnection& EtcdClient::connection(Clock::time_point deadline) {
  if (conn_) return *conn_;
  auto conn =
      std::make_unique<HttpConnection>(options_.endpoints[current_], tls_ ? &tls_->context : nullptr, &interrupted_);
  conn->connect(std::min(deadline, Clock::now() + options_.connect_timeout));
  if (!options_.username.empty() && token_.empty()) authenticate(*conn, deadline);
  conn_ = std::move(conn);
  return *conn_;
}

std::string EtcdClient::call_once(const std::string& target, const std::string& body, Clock::time_point deadline) {
  HttpConnection& conn = connection(deadline);
  HttpReply reply = conn.post(target, body, token_, deadline);
  if (reply.status == 200) return reply.body;
  const ErrorReply err = parse_error(reply.body);
  if (err.code == kCodeUnavailable || reply.status == 503) throw MemberUnavailable(err.message);
  if (err.code == kCodeUnauthenticated && !options_.username.empty()) throw TokenExpired(err.message);
  if (mentions(err.message, "user name is empty") || mentions(err.message, "permission denied") ||
      err.code == kCodeUnauthenticated)
    throw EtcdRejected(
        fmt::format("etcd at {} refused {}: {}; {}", conn.endpoint().text(), target, err.message,
                    options_.username.empty()
                        ? "it requires authentication: pass --rdzv-conf username=NAME and the "
                          "password in DDP_LAUNCH_ETCD_PASSWORD (or password_file=PATH)"
                        : "give user '" + options_.username + "' read-write access to the prefix /ddp-launch/"));
  if (mentions(reply.body, "HTTPS server"))
    throw EtcdRejected(fmt::format("{} speaks TLS: pass --rdzv-conf protocol=https,cacert=PATH (or https:// endpoints)",
                                   conn.endpoint().text()));
  throw EtcdError(fmt::format("etcd at {} refused {}: {} (code {})", conn.endpoint().text(), target,
                              err.message.empty() ? "HTTP " + std::to_string(reply.status) : err.message, err.code));
}

std::string EtcdClient::call(const std::string& target, const std::string& body) {
  const auto deadline = Clock::now() + options_.request_timeout;
  std::vector<std::string> failures(options_.endpoints.size());
  bool token_renewed = false;
  for (size_t tries = 1;; ++tries) {
    if (interrupted_) throw EtcdError("interrupted");
    try {
      return call_once(target, body, deadline);
    } catch (const ConnectionError& e) {
      if (e.rejected()) throw EtcdRejected(e.what());
      failures[current_] = e.what();
    } catch (const MemberUnavailable& e) {
      failures[current_] = current_endpoint() + ": " + e.what();
    } catch (const TokenExpired& e) {
      token_.clear();
      if (token_renewed) throw EtcdRejected(fmt::format("etcd at {}: {}", current_endpoint(), e.what()));
      token_renewed = true;
      conn_.reset();
      continue;
    }
    conn_.reset();
    current_ = next_endpoint(current_, options_.endpoints.size());
    if (tries % options_.endpoints.size() == 0) pause_until(deadline, kRoundPause);
    if (Clock::now() >= deadline) {
      std::string why;
      for (const auto& f : failures)
        if (!f.empty()) why += (why.empty() ? "" : "; ") + f;
      throw EtcdUnavailable(fmt::format("no etcd member answered within {:.1f} s (tried {}): {}",
                                        options_.request_timeout.count() / 1000.0, endpoints_text(), why));
    }
  }
}

RangeResult EtcdClient::range(const std::string& key, const std::string& range_end, bool count_only) {
  return parse_range(call("/v3/kv/range", range_body(key, range_end, count_only)));
}

int64_t EtcdClient::put(const PutOp& op) { return parse_revision(call("/v3/kv/put", put_body(op))); }

int64_t EtcdClient::delete_range(const std::string& key, const std::string& range_end) {
  return parse_deleted(call("/v3/kv/deleterange", delete_body(key, range_end)));
}

TxnResult EtcdClient::txn(const TxnRequest& t) { return parse_txn(call("/v3/kv/txn", txn_body(t))); }

int64_t EtcdClient::lease_grant(int64_t ttl_s) {
  return parse_lease_id(call("/v3/lease/grant", lease_grant_body(ttl_s)));
}

int64_t EtcdClient::lease_keepalive(int64_t id) {
  return parse_lease_ttl(call("/v3/lease/keepalive", lease_id_body(id)));
}

void EtcdClient::lease_revoke(int64_t id) {
  try {
    call("/v3/lease/revoke", lease_id_body(id));
  } catch (const EtcdError& e) {
    if (!mentions(e.what(), "lease not found")) throw;  // already gone: what we wanted
  }
}

bool EtcdClient::watch_change(const std::string& key, int64_t from, Clock::time_point deadline) {
  try {
    if (interrupted_) return false;
    HttpConnection watch(options_.endpoints[current_], tls_ ? &tls_->context : nullptr, &interrupted_);
    watch.connect(std::min(deadline, Clock::now() + options_.connect_timeout));
    if (!options_.username.empty() && token_.empty()) authenticate(watch, deadline);
    std::string error_body;
    if (watch.post_stream("/v3/watch", watch_body(key, from), token_, deadline, &error_body) != 200) {
      if (parse_error(error_body).code == kCodeUnauthenticated) token_.clear();
      pause_until(deadline, kWatchPause);
      return false;
    }
    for (;;) {
      std::optional<std::string> line = watch.next_line(deadline);
      if (!line) return false;
      const WatchBatch batch = parse_watch_line(*line);
      if (batch.events > 0 || batch.canceled) return true;
    }
  } catch (const ConnectionError& e) {
    if (e.rejected()) throw EtcdRejected(e.what());
  } catch (const EtcdProtocolError&) {  // a broken or cancelled watch: the caller reads the key again
  } catch (const MemberUnavailable&) {  // the same: the next unary call fails over
  }
  pause_until(deadline, kWatchPause);
  return false;
}

}  // namespace ddp::launch::etcd
