// The agent store's wire protocol (version 1), as constants and plain structs; codec.hpp
// turns them into bytes. Every message is a frame: uint32 payload length (network byte
// order) + payload, at most max_frame_bytes (checked before anything is allocated).
// Server speaks first (Greeting: magic, version, nonce); the client answers HELLO with
// HMAC-SHA256(token, nonce); nothing else is processed before that proof checks out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "launcher/store/store.hpp"

namespace ddp::launch::store {

inline constexpr uint32_t kMagic = 0x44445053;  // "DDPS"
inline constexpr uint16_t kProtocolVersion = 1;
inline constexpr uint32_t kDefaultMaxFrameBytes = 16u << 20;  // 16 MiB
// The first client frame (HELLO) is tiny: before the proof checks out no larger frame is
// accepted, so an unauthenticated peer cannot make the server buffer more than this.
inline constexpr uint32_t kMaxHelloFrameBytes = 4096;
inline constexpr size_t kMaxNameBytes = 1024;  // HELLO's client name
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kFrameHeaderBytes = 4;
// The key the server sets when a named client with a heartbeat disappears.
inline constexpr const char* kDroppedPrefix = "__dropped__/";
// The number of such keys the server has set (an integer, ADDed to with each): a watcher that
// finds it unchanged need not look at any name.
inline constexpr const char* kDroppedCountKey = "__dropped_count__";

// Request opcodes. Only ever append: the numbers are the wire format.
enum class Op : uint8_t {
  kHello = 1,       // magic, version, proof, name, heartbeat_ms
  kSet = 2,         // key, value
  kGet = 3,         // key, timeout: waits for key
  kAdd = 4,         // key, delta -> number
  kCompareSet = 5,  // key, expected, desired -> value now stored
  kWait = 6,        // keys, timeout -> kOk or kTimeout (values = missing keys)
  kCheck = 7,       // keys -> flag
  kDelete = 8,      // key -> flag (existed)
  kMultiGet = 9,    // keys, timeout -> values
  kMultiSet = 10,   // keys, values
  kTryGet = 11,     // key -> flag, value
  kPing = 12,       // answered at once, even while another request waits
  kGoodbye = 13,    // a clean leave: no __dropped__ key when the connection closes
  // key, request id (one value), delta -> number. Like ADD, but a named client's retry of
  // its last ADD_ONCE (same id, after a reconnect) returns the first result instead of
  // adding twice: what makes a retried ADD safe.
  kAddOnce = 14,
};
inline constexpr uint8_t kLastOp = static_cast<uint8_t>(Op::kAddOnce);
const char* op_name(Op op);

enum class Status : uint8_t {
  kOk = 0,
  kTimeout = 1,  // a waiting request ran out of time; values = the keys still missing
  kError = 2,    // message says why (bad request, wrong version, bad token)
};

// A frame or a field that does not parse: the connection is closed, never resynchronised.
class ProtocolError : public StoreError {
 public:
  using StoreError::StoreError;
};

// First frame, server -> client.
struct Greeting {
  uint32_t magic = kMagic;
  uint16_t version = kProtocolVersion;
  bool auth_required = false;
  std::string nonce;  // kNonceBytes random bytes
};

// First frame, client -> server.
struct Hello {
  uint32_t magic = kMagic;
  uint16_t version = kProtocolVersion;
  std::string proof;          // HMAC-SHA256(token, nonce); empty without a token
  std::string name;           // optional: identifies the client in __dropped__/<name>
  uint32_t heartbeat_ms = 0;  // optional: silence longer than this drops the client
};

// Every later client -> server frame. Which fields matter depends on op (see Op).
struct Request {
  Op op = Op::kPing;
  uint32_t timeout_ms = 0;  // kGet, kWait, kMultiGet
  int64_t delta = 0;        // kAdd
  std::vector<std::string> keys;
  std::vector<std::string> values;  // kSet: 1, kMultiSet: one per key, kCompareSet: expected, desired

  bool operator==(const Request& o) const {
    return op == o.op && timeout_ms == o.timeout_ms && delta == o.delta && keys == o.keys && values == o.values;
  }
};

// Every server -> client frame after the greeting (the HELLO reply included).
struct Response {
  Op op = Op::kPing;  // the request's op, echoed
  Status status = Status::kOk;
  bool flag = false;   // kCheck, kDelete, kTryGet
  int64_t number = 0;  // kAdd
  std::vector<std::string> values;
  std::string message;  // kError

  bool operator==(const Response& o) const {
    return op == o.op && status == o.status && flag == o.flag && number == o.number && values == o.values &&
           message == o.message;
  }
};

}  // namespace ddp::launch::store
