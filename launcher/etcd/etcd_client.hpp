// A blocking etcd v3 client over the JSON gateway (HTTP/1.1, optionally TLS, optionally
// user/password auth): kv range/put/deleterange/txn, lease grant/keepalive/revoke, and a
// watch that waits for the next change of a key. Failover: a request that finds its member
// unreachable (or the member answers "unavailable") moves on to the next endpoint, round
// robin, until request_timeout; only then it throws EtcdUnavailable. Every error is an
// EtcdError (etcd_error.hpp). Retries are plain resends: a txn whose reply was lost may run
// twice (callers compare, so that is safe).
// Not thread-safe: one client per thread (the lease keeper has its own), except
// interrupt().
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "launcher/etcd/etcd_codec.hpp"
#include "launcher/etcd/etcd_error.hpp"
#include "launcher/etcd/http_connection.hpp"

namespace ddp::launch::etcd {

struct EtcdOptions {
  std::vector<Endpoint> endpoints;
  bool tls = false;    // https
  std::string cacert;  // PEM file: the CA that signed the members' certificates ("" = system CAs)
  std::string cert;    // PEM client certificate (etcd --client-cert-auth), with key
  std::string key;
  std::string username;  // "" = no auth
  std::string password;
  std::chrono::milliseconds request_timeout{3000};  // one request, failover included
  std::chrono::milliseconds connect_timeout{1000};  // one connection attempt
};

class EtcdClient {
 public:
  // Throws EtcdRejected when the TLS setup or its files cannot be loaded. Connects lazily.
  explicit EtcdClient(EtcdOptions options);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  RangeResult range(const std::string& key, const std::string& range_end = "", bool count_only = false);
  int64_t put(const PutOp& put);                                                    // the new revision
  int64_t delete_range(const std::string& key, const std::string& range_end = "");  // keys deleted
  TxnResult txn(const TxnRequest& txn);
  int64_t lease_grant(int64_t ttl_s);   // the lease's id
  int64_t lease_keepalive(int64_t id);  // seconds left; 0: the lease is gone
  void lease_revoke(int64_t id);        // its keys go with it
  // Blocks until `key` changes at or after revision `from` or the deadline passes; returns
  // early (false) when the watch breaks: the caller reads the key again either way.
  bool watch_change(const std::string& key, int64_t from, Clock::time_point deadline);

  // Thread-safe: a blocked call returns within kInterruptPoll, throwing EtcdError (or
  // false from watch_change), and so does every later one. For the abort wait thread's shutdown.
  void interrupt() { interrupted_ = true; }
  bool interrupted() const { return interrupted_; }

  std::string endpoints_text() const;  // "h1:p1, h2:p2"
  std::string current_endpoint() const;

 private:
  std::string call(const std::string& target, const std::string& body);
  std::string call_once(const std::string& target, const std::string& body, Clock::time_point deadline);
  void authenticate(HttpConnection& conn, Clock::time_point deadline);
  HttpConnection& connection(Clock::time_point deadline);

  struct Tls;
  EtcdOptions options_;
  std::unique_ptr<Tls> tls_;
  std::unique_ptr<HttpConnection> conn_;
  size_t current_ = 0;  // the member in use
  std::string token_;   // auth token, once authenticated
  std::atomic<bool> interrupted_{false};
};

}  // namespace ddp::launch::etcd
