#include "launcher/c10d/wire.hpp"

#include <cstring>

#include <fmt/format.h>

namespace ddp::launch::c10d {
namespace {

constexpr size_t kCompactAt = 64 * 1024;  // drop consumed bytes once this many pile up

uint8_t code_of(Dialect d, Op op) {
  for (uint8_t c = 0; c < 32; ++c)
    if (op_of_code(d, c) == op) return c;
  throw std::logic_error(fmt::format("{} has no {} request", dialect_name(d), op_name(op)));
}

// Reads from a window of the buffer; each read is all or nothing.
class Cursor {
 public:
  Cursor(const std::string& b, size_t pos) : b_(b), pos_(pos) {}
  template <typename T>
  bool value(T& out) {
    if (b_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(&out, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool bytes(uint64_t n, std::string& out) {
    if (b_.size() - pos_ < n) return false;
    out.assign(b_, pos_, n);
    pos_ += n;
    return true;
  }
  size_t pos() const { return pos_; }

 private:
  const std::string& b_;
  size_t pos_;
};

}  // namespace

// One request on its way out of the buffer: where the reading is, what it has read so far,
// the value bytes counted against max_request_bytes, and what was wrong (Read::kError).
struct Decoder::Reading {
  Cursor in;
  Request r;
  uint64_t total = 0;
  std::string error;
};

// Opcode numbers -> Op, per dialect. 2.x's is c10d's QueryType, in its order.
std::optional<Op> op_of_code(Dialect d, uint8_t code) {
  static constexpr Op k113[] = {Op::kSet,  Op::kCompareSet, Op::kGet,      Op::kAdd,      Op::kCheck,
                                Op::kWait, Op::kNumKeys,    Op::kWatchKey, Op::kDeleteKey};
  static constexpr Op k2[] = {Op::kValidate, Op::kSet,      Op::kCompareSet, Op::kGet,       Op::kAdd,
                              Op::kCheck,    Op::kWait,     Op::kNumKeys,    Op::kDeleteKey, Op::kAppend,
                              Op::kMultiGet, Op::kMultiSet, Op::kCancelWait, Op::kPing,      Op::kQueuePush,
                              Op::kQueuePop, Op::kQueueLen, Op::kListKeys,   Op::kBarrier};
  if (d == Dialect::kTorch113 && code < std::size(k113)) return k113[code];
  if (d == Dialect::kTorch2 && code < std::size(k2)) return k2[code];
  return std::nullopt;
}

const char* dialect_name(Dialect d) {
  switch (d) {
    case Dialect::kTorch113: return "torch 1.13";
    case Dialect::kTorch2: return "torch 2.x";
    case Dialect::kUnknown: break;
  }
  return "unknown";
}

const char* op_name(Op op) {
  static constexpr const char* kNames[] = {"VALIDATE",   "SET",       "COMPARE_SET", "GET",         "ADD",
                                           "CHECK",      "WAIT",      "GETNUMKEYS",  "WATCH_KEY",   "DELETE_KEY",
                                           "APPEND",     "MULTI_GET", "MULTI_SET",   "CANCEL_WAIT", "PING",
                                           "QUEUE_PUSH", "QUEUE_POP", "QUEUE_LEN",   "LIST_KEYS",   "BARRIER"};
  return kNames[static_cast<size_t>(op)];
}

Decoder::Status Decoder::fail(std::string why) {
  error_ = std::move(why);
  return Status::kError;
}

// The first bytes name the dialect: 2.x opens with VALIDATE (opcode 0, then the magic);
// 1.13's first request is any of its opcodes 0..8, and its opcode 0 (SET) is followed by a
// key length, never the magic (that length would be ~1 GB, far over any key limit). 9..18
// are 2.x requests without VALIDATE.
Decoder::Status Decoder::detect() {
  const auto b0 = static_cast<uint8_t>(buffer_[pos_]);
  if (b0 == 0) {
    if (buffered() < 5) return Status::kNeedMore;
    uint32_t magic = 0;
    std::memcpy(&magic, buffer_.data() + pos_ + 1, 4);
    dialect_ = magic == kValidationMagic ? Dialect::kTorch2 : Dialect::kTorch113;
    return Status::kRequest;
  }
  if (b0 <= 8) {
    dialect_ = Dialect::kTorch113;
    return Status::kRequest;
  }
  if (op_of_code(Dialect::kTorch2, b0))
    return fail(
        fmt::format("first byte {} is a torch 2.x opcode, but a 2.x client starts with VALIDATE "
                    "(opcode 0 and the magic number)",
                    b0));
  const char c = static_cast<char>(b0);
  return fail(fmt::format("not a c10d TCPStore client: first byte 0x{:02x}{}", b0,
                          c >= 0x20 && c < 0x7f ? fmt::format(" ('{}')", c) : std::string()));
}

Decoder::Status Decoder::next(Request& out) {
  if (!error_.empty()) return Status::kError;
  if (buffered() == 0) return Status::kNeedMore;
  if (dialect_ == Dialect::kUnknown) {
    if (Status s = detect(); s != Status::kRequest) return s;
  }
  Reading reading{Cursor(buffer_, pos_), {}, 0, {}};
  uint8_t code = 0;
  reading.in.value(code);
  const std::optional<Op> op = op_of_code(dialect_, code);
  if (!op) return fail(fmt::format("unknown opcode {} for a {} client", code, dialect_name(dialect_)));
  if (dialect_ == Dialect::kTorch2 && validated_ == (*op == Op::kValidate))
    return fail(validated_ ? "a second VALIDATE" : fmt::format("{} before VALIDATE", op_name(*op)));
  reading.r.op = *op;
  const Read s = read_body(reading);
  if (s == Read::kNeedMore) return Status::kNeedMore;
  if (s == Read::kError) return fail(reading.error);
  return take(reading, out);
}

Decoder::Status Decoder::take(Reading& reading, Request& out) {
  Request& r = reading.r;
  if (r.op == Op::kValidate) {
    if (r.nonce != kValidationMagic) return fail(fmt::format("VALIDATE with the wrong magic 0x{:08x}", r.nonce));
    validated_ = true;
  }
  pos_ = reading.in.pos();
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  } else if (pos_ >= kCompactAt) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  out = std::move(r);
  return Status::kRequest;
}

Decoder::Read Decoder::read_key(Reading& reading, std::string& key) const {
  uint64_t n = 0;
  if (!reading.in.value(n)) return Read::kNeedMore;
  if (n > limits_.max_key_bytes) {
    reading.error =
        fmt::format("{}: a key of {} bytes, over the limit of {}", op_name(reading.r.op), n, limits_.max_key_bytes);
    return Read::kError;
  }
  return reading.in.bytes(n, key) ? Read::kOk : Read::kNeedMore;
}

Decoder::Read Decoder::read_value(Reading& reading, std::string& value) const {
  uint64_t n = 0;
  if (!reading.in.value(n)) return Read::kNeedMore;
  reading.total += n;
  if (n > limits_.max_value_bytes || reading.total > limits_.max_request_bytes) {
    reading.error = fmt::format("{}: a value of {} bytes, over the limit of {}{}", op_name(reading.r.op), n,
                                limits_.max_value_bytes, n > limits_.max_value_bytes ? "" : " (for the whole request)");
    return Read::kError;
  }
  return reading.in.bytes(n, value) ? Read::kOk : Read::kNeedMore;
}

Decoder::Read Decoder::read_count(Reading& reading, uint64_t& n) const {
  if (!reading.in.value(n)) return Read::kNeedMore;
  if (n > limits_.max_keys_per_request) {
    reading.error =
        fmt::format("{}: {} keys, over the limit of {}", op_name(reading.r.op), n, limits_.max_keys_per_request);
    return Read::kError;
  }
  return Read::kOk;
}

Decoder::Read Decoder::read_one_key(Reading& reading) const {
  reading.r.keys.emplace_back();
  return read_key(reading, reading.r.keys.back());
}

Decoder::Read Decoder::read_one_value(Reading& reading) const {
  reading.r.values.emplace_back();
  return read_value(reading, reading.r.values.back());
}

Decoder::Read Decoder::read_body(Reading& reading) const {
  Request& r = reading.r;
  Read s = Read::kOk;
  switch (r.op) {
    case Op::kValidate:
    case Op::kPing: return reading.in.value(r.nonce) ? Read::kOk : Read::kNeedMore;
    case Op::kNumKeys:
    case Op::kCancelWait:
    case Op::kListKeys: return Read::kOk;
    case Op::kGet:
    case Op::kWatchKey:
    case Op::kDeleteKey:
    case Op::kQueuePop:
    case Op::kQueueLen: return read_one_key(reading);
    case Op::kSet:
    case Op::kAppend:
    case Op::kQueuePush:
      if ((s = read_one_key(reading)) != Read::kOk) return s;
      return read_one_value(reading);
    case Op::kCompareSet:
      if ((s = read_one_key(reading)) != Read::kOk || (s = read_one_value(reading)) != Read::kOk) return s;
      return read_one_value(reading);
    case Op::kAdd:
    case Op::kBarrier:
      if ((s = read_one_key(reading)) != Read::kOk) return s;
      return reading.in.value(r.op == Op::kAdd ? r.delta : r.world_size) ? Read::kOk : Read::kNeedMore;
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
    case Op::kMultiSet: {
      uint64_t n = 0;
      if ((s = read_count(reading, n)) != Read::kOk) return s;
      for (uint64_t i = 0; i < n; ++i) {
        if ((s = read_one_key(reading)) != Read::kOk) return s;
        if (r.op == Op::kMultiSet && (s = read_one_value(reading)) != Read::kOk) return s;
      }
      return Read::kOk;
    }
  }
  return Read::kOk;
}

namespace {
template <typename T>
void put(std::string& out, T v) {
  char raw[sizeof(T)];
  std::memcpy(raw, &v, sizeof(T));
  out.append(raw, sizeof(T));
}
void put_bytes(std::string& out, const std::string& v) {
  put<uint64_t>(out, v.size());
  out += v;
}
}  // namespace

std::string encode_u8(uint8_t v) { return std::string(1, static_cast<char>(v)); }

std::string encode_u32(uint32_t v) {
  std::string out;
  put(out, v);
  return out;
}

std::string encode_i64(int64_t v) {
  std::string out;
  put(out, v);
  return out;
}

std::string encode_bytes(const std::string& v) {
  std::string out;
  put_bytes(out, v);
  return out;
}

std::string encode_watch_event(uint8_t type, const std::string& key, const std::string& old_value,
                               const std::string& new_value) {
  std::string out = encode_u8(type);
  put_bytes(out, key);
  put_bytes(out, old_value);
  put_bytes(out, new_value);
  return out;
}

std::string encode_request(Dialect dialect, const Request& r) {
  std::string out = encode_u8(code_of(dialect, r.op));
  switch (r.op) {
    case Op::kValidate:
    case Op::kPing: put(out, r.nonce); break;
    case Op::kAdd:
    case Op::kBarrier:
      put_bytes(out, r.keys.at(0));
      put(out, r.op == Op::kAdd ? r.delta : r.world_size);
      break;
    case Op::kCheck:
    case Op::kWait:
    case Op::kMultiGet:
    case Op::kMultiSet:
      put<uint64_t>(out, r.keys.size());
      for (size_t i = 0; i < r.keys.size(); ++i) {
        put_bytes(out, r.keys[i]);
        if (r.op == Op::kMultiSet) put_bytes(out, r.values.at(i));
      }
      break;
    default:
      for (const auto& k : r.keys) put_bytes(out, k);
      for (const auto& v : r.values) put_bytes(out, v);
  }
  return out;
}

}  // namespace ddp::launch::c10d
