// The pure half of the etcd v3 client: base64, the range end of a prefix, the endpoint
// list, and the JSON bodies of etcd's v3 gateway (grpc-gateway: int64 as strings, keys and
// values base64) in both directions. No I/O; every parse_* but parse_error throws
// EtcdProtocolError on a body it cannot read. Thread-safe (no state).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/base/host_port.hpp"
#include "launcher/etcd/etcd_error.hpp"

namespace ddp::launch::etcd {

std::string base64_encode(std::string_view bytes);
std::optional<std::string> base64_decode(std::string_view text);  // nullopt: not base64

// The range end that selects every key starting with `prefix` (etcd's clientv3.GetPrefixEnd):
// the prefix with its last byte below 0xff incremented and what follows dropped; "\0" (every
// key) when there is none.
std::string prefix_range_end(const std::string& prefix);

struct Endpoint {
  std::string host;
  int port = 0;
  std::string text() const { return host + ":" + std::to_string(port); }
};
std::string endpoints_text(const std::vector<Endpoint>& endpoints);  // "h1:p1, h2:p2"

// The members as the client dials them: a member without a port (0) gets default_port, and
// https_seen is set when one is https. The launcher's come read from --rdzv-endpoint (cli/).
std::vector<Endpoint> endpoints_of(const std::vector<HttpEndpoint>& members, int default_port,
                                   bool* https_seen = nullptr);
// The same from text, "host:port[,host:port...]" (base's parse_http_endpoint_list, for a
// caller that holds text: tests, tools). Bad text is not an etcd error: HostPortError (a
// usage error) naming the bad item.
std::vector<Endpoint> parse_endpoints(const std::string& text, int default_port, bool* https_seen = nullptr);

// Failover: the member to try after `failed` of `count` (round robin).
inline size_t next_endpoint(size_t failed, size_t count) { return count == 0 ? 0 : (failed + 1) % count; }

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

struct RangeResult {
  int64_t revision = 0;  // the store's revision when read (watch from revision + 1)
  int64_t count = 0;
  std::vector<KeyValue> kvs;
};

// One comparison of a transaction: the key's create revision, mod revision or value.
struct Compare {
  enum class Target { kCreateRevision, kModRevision, kValue };
  Target target = Target::kCreateRevision;
  std::string key;
  int64_t revision = 0;  // for the revision targets
  std::string value;     // for kValue
};

struct PutOp {
  std::string key;
  std::string value;
  int64_t lease = 0;
};

// If every compare holds (equality), do the puts; otherwise read failure_range (if any).
struct TxnRequest {
  std::vector<Compare> compare;
  std::vector<PutOp> success;
  std::string failure_range;  // "" = no read on failure
};

struct TxnResult {
  bool succeeded = false;
  int64_t revision = 0;
  std::vector<KeyValue> failure_kvs;  // what failure_range read
};

struct WatchBatch {
  bool created = false;
  bool canceled = false;
  int64_t compact_revision = 0;
  int events = 0;  // puts and deletes in this message
};

std::string range_body(const std::string& key, const std::string& range_end = "", bool count_only = false);
std::string put_body(const PutOp& put);
std::string delete_body(const std::string& key, const std::string& range_end = "");
std::string txn_body(const TxnRequest& txn);
std::string lease_grant_body(int64_t ttl_s);
std::string lease_id_body(int64_t id);  // keepalive, revoke
std::string watch_body(const std::string& key, int64_t start_revision);
std::string authenticate_body(const std::string& name, const std::string& password);

RangeResult parse_range(const std::string& body);
int64_t parse_revision(const std::string& body);  // put, delete: the header's revision
int64_t parse_deleted(const std::string& body);
TxnResult parse_txn(const std::string& body);
int64_t parse_lease_id(const std::string& body);   // grant
int64_t parse_lease_ttl(const std::string& body);  // keepalive: seconds left, 0 = expired
std::string parse_token(const std::string& body);  // authenticate
WatchBatch parse_watch_line(const std::string& line);

// An error reply: etcd's message and gRPC code (0 when the body is not an error, or not
// readable: then the message is the body's start). Never throws.
struct ErrorReply {
  int code = 0;
  std::string message;
};
ErrorReply parse_error(const std::string& body);

// gRPC codes etcd uses that the client reacts to.
inline constexpr int kCodeInvalidArgument = 3;
inline constexpr int kCodeNotFound = 5;
inline constexpr int kCodeFailedPrecondition = 9;
inline constexpr int kCodeUnavailable = 14;
inline constexpr int kCodeUnauthenticated = 16;

}  // namespace ddp::launch::etcd
