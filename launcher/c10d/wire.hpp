// The wire protocol of c10d's TCPStore, as its clients speak it: a pure, socket-free,
// incremental decoder (bytes in -> a complete request, need more, or a protocol error) and
// the reply encoders. Two dialects, told apart by a connection's first bytes: torch 1.13
// (opcodes SET=0 .. DELETE_KEY=8, WATCH_KEY on a second connection) and torch 2.x (VALIDATE
// with a magic number first, then SET=1 .. BARRIER=18). Integers are the host's byte
// order, as c10d sends them (little-endian on every platform it runs on). No threads, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launch::c10d {

enum class Dialect : uint8_t { kUnknown, kTorch113, kTorch2 };
const char* dialect_name(Dialect d);

// What a request asks, the same for both dialects (each maps its own opcode numbers).
enum class Op : uint8_t {
  kValidate,    // 2.x, first request only: the magic number
  kSet,         // key, value; no reply
  kCompareSet,  // key, expected, desired -> the value now stored (see KeySpace)
  kGet,         // key -> value
  kAdd,         // key, delta -> new value (int64)
  kCheck,       // keys -> READY (0) / NOT_READY (1)
  kWait,        // keys -> STOP_WAITING (0) once all exist
  kNumKeys,     // -> int64
  kWatchKey,    // 1.13: key -> KEY_CALLBACK_REGISTERED, then one event per change
  kDeleteKey,   // key -> int64 (0 or 1)
  kAppend,      // key, value; no reply
  kMultiGet,    // keys -> one value each
  kMultiSet,    // keys, values; no reply
  kCancelWait,  // -> WAIT_CANCELED (1)
  kPing,        // nonce -> the nonce
  kQueuePush,   // key, value; no reply
  kQueuePop,    // key -> int64 length before the pop, then the value if there was one
  kQueueLen,    // key -> int64
  kListKeys,    // -> int64 n, then n keys (the data keys, not the queues)
  kBarrier,     // key, world size -> STOP_WAITING (0) once the key's counter reaches it
};
const char* op_name(Op op);

constexpr uint32_t kValidationMagic = 0x3C85F7CE;  // 2.x's VALIDATE argument

struct Limits {
  uint64_t max_key_bytes = 64 * 1024;          // one key
  uint64_t max_value_bytes = 64ull << 20;      // one value
  uint64_t max_keys_per_request = 128 * 1024;  // CHECK, WAIT, MULTI_GET, MULTI_SET
  uint64_t max_request_bytes = 256ull << 20;   // everything one request carries
};

struct Request {
  Op op = Op::kSet;
  std::vector<std::string> keys;    // in order
  std::vector<std::string> values;  // SET/APPEND/QUEUE_PUSH: 1; COMPARE_SET: expected, desired; MULTI_SET: one per key
  int64_t delta = 0;                // ADD
  int64_t world_size = 0;           // BARRIER
  uint32_t nonce = 0;               // PING, VALIDATE (the magic)
};

// One connection's byte stream. feed() appends; next() takes at most one request off the
// front. After an error the decoder stays failed (the connection is to be closed).
class Decoder {
 public:
  enum class Status { kRequest, kNeedMore, kError };
  explicit Decoder(Limits limits = {}) : limits_(limits) {}

  void feed(const char* data, size_t n) { buffer_.append(data, n); }
  // kRequest fills `out`; kError sets error() (one line: what was wrong).
  Status next(Request& out);

  Dialect dialect() const { return dialect_; }
  const std::string& error() const { return error_; }
  size_t buffered() const { return buffer_.size() - pos_; }  // bytes of a request not yet complete

 private:
  enum class Read { kOk, kNeedMore, kError };  // one field (or a request's body) read
  struct Reading;                              // the request being read (wire.cpp)

  Status detect();
  Status fail(std::string why);
  // The fields after the opcode, as r.op asks; each read takes the field whole or nothing.
  Read read_body(Reading& reading) const;
  Read read_key(Reading& reading, std::string& key) const;      // a length, then the key
  Read read_value(Reading& reading, std::string& value) const;  // a length, then the value
  Read read_count(Reading& reading, uint64_t& n) const;         // how many keys follow
  Read read_one_key(Reading& reading) const;                    // appended to r.keys
  Read read_one_value(Reading& reading) const;                  // appended to r.values
  // A request read whole: checks VALIDATE's magic, consumes its bytes, hands it out.
  Status take(Reading& reading, Request& out);

  Limits limits_;
  std::string buffer_;
  size_t pos_ = 0;  // start of the next request in buffer_
  Dialect dialect_ = Dialect::kUnknown;
  bool validated_ = false;  // 2.x: VALIDATE seen
  std::string error_;
};

// The request a dialect's opcode `code` names; nullopt when the dialect has none (the
// decoder then closes the connection). The whole table: codes 0.. until the first nullopt.
std::optional<Op> op_of_code(Dialect d, uint8_t code);

// Replies, as both dialects' clients read them.
std::string encode_u8(uint8_t v);
std::string encode_u32(uint32_t v);
std::string encode_i64(int64_t v);
std::string encode_bytes(const std::string& v);  // uint64 length, then the bytes

// The one-byte answers.
constexpr uint8_t kCheckReady = 0, kCheckNotReady = 1;
constexpr uint8_t kStopWaiting = 0, kWaitCanceled = 1;
// 1.13's watch events (on the connection that sent WATCH_KEY).
constexpr uint8_t kKeyUpdated = 0, kKeyCreated = 1, kKeyDeleted = 2, kKeyCallbackRegistered = 3;

// A watch event: type, key, old value, new value.
std::string encode_watch_event(uint8_t type, const std::string& key, const std::string& old_value,
                               const std::string& new_value);

// A request as a 1.13 or 2.x client would send it (the tests' client side).
std::string encode_request(Dialect dialect, const Request& r);

}  // namespace ddp::launch::c10d
