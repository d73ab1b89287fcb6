#include "launcher/store/codec.hpp"

#include <fmt/format.h>

#include <cstring>

namespace ddp::launch::store {
namespace {

// Appends big-endian integers and length-prefixed byte strings to a frame.
class Writer {
 public:
  Writer() { out_.resize(kFrameHeaderBytes); }  // length filled in by finish()
  void reserve(size_t bytes) { out_.reserve(bytes); }
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(uint16_t v) { put(v, 2); }
  void u32(uint32_t v) { put(v, 4); }
  void i64(int64_t v) { put(static_cast<uint64_t>(v), 8); }
  void bytes(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    out_ += s;
  }
  void list(const std::vector<std::string>& items) {
    u32(static_cast<uint32_t>(items.size()));
    for (const auto& s : items) bytes(s);
  }
  // A payload that does not fit the u32 header is refused, never wrapped.
  std::string finish() {
    const uint64_t payload = out_.size() - kFrameHeaderBytes;
    if (payload > UINT32_MAX)
      throw ProtocolError(fmt::format("frame of {} bytes cannot be encoded (the limit is 4 GiB)", payload));
    for (int i = 0; i < 4; ++i) out_[i] = static_cast<char>((payload >> (8 * (3 - i))) & 0xff);
    return std::move(out_);
  }

 private:
  void put(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
};

// Reads what Writer wrote; every length is checked against the bytes left before use.
class Reader {
 public:
  Reader(std::string_view in, const char* what) : in_(in), what_(what) {}
  uint8_t u8() { return static_cast<uint8_t>(get(1)); }
  uint16_t u16() { return static_cast<uint16_t>(get(2)); }
  uint32_t u32() { return static_cast<uint32_t>(get(4)); }
  int64_t i64() { return static_cast<int64_t>(get(8)); }
  std::string bytes() {
    const uint32_t n = u32();
    need(n);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  std::vector<std::string> list() {
    const uint32_t n = u32();
    if (n > (in_.size() - pos_) / 4)  // each item needs at least its length: no huge reserve
      fail(fmt::format("announces {} items but only {} bytes follow", n, in_.size() - pos_));
    std::vector<std::string> items;
    items.reserve(n);
    for (uint32_t i = 0; i < n; ++i) items.push_back(bytes());
    return items;
  }
  void done() const {
    if (pos_ != in_.size()) fail(fmt::format("{} unexpected trailing bytes", in_.size() - pos_));
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw ProtocolError(fmt::format("malformed {} frame: {}", what_, why));
  }

 private:
  void need(size_t n) const {
    if (in_.size() - pos_ < n)
      fail(fmt::format("truncated at byte {} (needs {} more, has {})", pos_, n, in_.size() - pos_));
  }
  uint64_t get(int n) {
    need(static_cast<size_t>(n));
    uint64_t v = 0;
    for (int i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(in_[pos_ + i]);
    pos_ += static_cast<size_t>(n);
    return v;
  }
  std::string_view in_;
  const char* what_;
  size_t pos_ = 0;
};

Op checked_op(Reader& r) {
  const uint8_t raw = r.u8();
  if (raw < static_cast<uint8_t>(Op::kHello) || raw > kLastOp) r.fail(fmt::format("unknown opcode {}", raw));
  return static_cast<Op>(raw);
}

// The field counts each request op must carry.
void check_shape(const Request& q, Reader& r) {
  const size_t k = q.keys.size(), v = q.values.size();
  bool ok = true;
  switch (q.op) {
    case Op::kSet: ok = k == 1 && v == 1; break;
    case Op::kGet:
    case Op::kAdd:
    case Op::kDelete:
    case Op::kTryGet: ok = k == 1 && v == 0; break;
    case Op::kCompareSet:
    case Op::kAddOnce: ok = k == 1 && v == (q.op == Op::kAddOnce ? 1 : 2); break;
    case Op::kWait:
    case Op::kCheck:
    case Op::kMultiGet: ok = v == 0; break;
    case Op::kMultiSet: ok = k == v; break;
    case Op::kPing:
    case Op::kGoodbye: ok = k == 0 && v == 0; break;
    case Op::kHello: r.fail("HELLO is only valid as the first frame");
  }
  if (!ok) r.fail(fmt::format("{} with {} keys and {} values", op_name(q.op), k, v));
}

}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::kHello: return "HELLO";
    case Op::kSet: return "SET";
    case Op::kGet: return "GET";
    case Op::kAdd: return "ADD";
    case Op::kCompareSet: return "COMPARE_SET";
    case Op::kWait: return "WAIT";
    case Op::kCheck: return "CHECK";
    case Op::kDelete: return "DELETE";
    case Op::kMultiGet: return "MULTI_GET";
    case Op::kMultiSet: return "MULTI_SET";
    case Op::kTryGet: return "TRY_GET";
    case Op::kPing: return "PING";
    case Op::kGoodbye: return "GOODBYE";
    case Op::kAddOnce: return "ADD_ONCE";
  }
  return "UNKNOWN";
}

std::string encode_greeting(const Greeting& g) {
  Writer w;
  w.u32(g.magic);
  w.u16(g.version);
  w.u8(g.auth_required ? 1 : 0);
  w.bytes(g.nonce);
  return w.finish();
}

std::string encode_hello(const Hello& h) {
  Writer w;
  w.u8(static_cast<uint8_t>(Op::kHello));
  w.u32(h.magic);
  w.u16(h.version);
  w.bytes(h.proof);
  w.bytes(h.name);
  w.u32(h.heartbeat_ms);
  return w.finish();
}

std::string encode_request(const Request& q) {
  Writer w;
  w.u8(static_cast<uint8_t>(q.op));
  w.u32(q.timeout_ms);
  w.i64(q.delta);
  w.list(q.keys);
  w.list(q.values);
  return w.finish();
}

size_t encoded_size(const Response& p) {
  size_t n = kFrameHeaderBytes + 1 + 1 + 1 + 8 + 4 + 4 + p.message.size();
  for (const auto& v : p.values) n += 4 + v.size();
  return n;
}

std::string encode_response(const Response& p) {
  Writer w;
  w.u8(static_cast<uint8_t>(p.op));
  w.u8(static_cast<uint8_t>(p.status));
  w.u8(p.flag ? 1 : 0);
  w.i64(p.number);
  w.list(p.values);
  w.bytes(p.message);
  return w.finish();
}

std::string encode_values_reply(Op op, const std::vector<const std::string*>& values) {
  Writer w;
  size_t bytes = kFrameHeaderBytes + 1 + 1 + 1 + 8 + 4 + 4;
  for (const std::string* v : values) bytes += 4 + v->size();
  w.reserve(bytes);
  w.u8(static_cast<uint8_t>(op));
  w.u8(static_cast<uint8_t>(Status::kOk));
  w.u8(0);
  w.i64(0);
  w.u32(static_cast<uint32_t>(values.size()));
  for (const std::string* v : values) w.bytes(*v);
  w.bytes("");
  return w.finish();
}

// Magic and version are returned, not judged: the caller knows what to answer.
Greeting decode_greeting(std::string_view payload) {
  Reader r(payload, "greeting");
  Greeting g;
  g.magic = r.u32();
  if (g.magic != kMagic) r.fail(fmt::format("magic {:#010x}, expected {:#010x}", g.magic, kMagic));
  g.version = r.u16();
  const uint8_t auth = r.u8();
  if (auth > 1) r.fail(fmt::format("auth flag {}", auth));
  g.auth_required = auth == 1;
  g.nonce = r.bytes();
  r.done();
  return g;
}

Hello decode_hello(std::string_view payload) {
  Reader r(payload, "HELLO");
  if (r.u8() != static_cast<uint8_t>(Op::kHello)) r.fail("the first frame must be HELLO");
  Hello h;
  h.magic = r.u32();
  if (h.magic != kMagic) r.fail(fmt::format("magic {:#010x}, expected {:#010x}", h.magic, kMagic));
  h.version = r.u16();
  h.proof = r.bytes();
  h.name = r.bytes();
  h.heartbeat_ms = r.u32();
  r.done();
  return h;
}

Request decode_request(std::string_view payload) {
  Reader r(payload, "request");
  Request q;
  q.op = checked_op(r);
  if (q.op == Op::kHello) r.fail("HELLO is only valid as the first frame");
  q.timeout_ms = r.u32();
  q.delta = r.i64();
  q.keys = r.list();
  q.values = r.list();
  r.done();
  check_shape(q, r);
  return q;
}

Response decode_response(std::string_view payload) {
  Reader r(payload, "response");
  Response p;
  p.op = checked_op(r);
  const uint8_t status = r.u8();
  if (status > static_cast<uint8_t>(Status::kError)) r.fail(fmt::format("unknown status {}", status));
  p.status = static_cast<Status>(status);
  const uint8_t flag = r.u8();
  if (flag > 1) r.fail(fmt::format("flag {}", flag));
  p.flag = flag == 1;
  p.number = r.i64();
  p.values = r.list();
  p.message = r.bytes();
  r.done();
  return p;
}

void FrameDecoder::feed(const char* data, size_t size) {
  buffer_.append(data, size);
  check_header();
}

// Validates every complete header now buffered, so an oversized frame is refused on
// arrival of its 4 length bytes, not after its body has been stored.
void FrameDecoder::check_header() {
  size_t pos = 0;
  while (pos + kFrameHeaderBytes <= buffer_.size()) {
    uint32_t len = 0;
    for (size_t i = 0; i < kFrameHeaderBytes; ++i) len = (len << 8) | static_cast<uint8_t>(buffer_[pos + i]);
    if (len == 0) throw ProtocolError("malformed frame: zero length");
    const uint32_t limit = frames_taken_ == 0 && pos == 0 ? first_frame_max_ : max_frame_bytes_;
    if (len > limit)
      throw ProtocolError(fmt::format("frame of {} bytes exceeds the maximum of {} bytes{}", len, limit,
                                      limit == max_frame_bytes_ ? "" : " before authentication"));
    pos += kFrameHeaderBytes + len;
  }
}

std::optional<std::string> FrameDecoder::next() {
  if (buffer_.size() < kFrameHeaderBytes) return std::nullopt;
  uint32_t len = 0;
  for (size_t i = 0; i < kFrameHeaderBytes; ++i) len = (len << 8) | static_cast<uint8_t>(buffer_[i]);
  if (buffer_.size() - kFrameHeaderBytes < len) return std::nullopt;
  std::string payload = buffer_.substr(kFrameHeaderBytes, len);
  buffer_.erase(0, kFrameHeaderBytes + len);
  ++frames_taken_;
  return payload;
}

}  // namespace ddp::launch::store
