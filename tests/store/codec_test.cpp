// The pure codec: round trips of every message, and rejection of malformed, truncated,
// oversized, wrong-magic and unknown-op frames, all without sockets.
#include <catch2/catch.hpp>

#include "launcher/store/codec.hpp"

using namespace ddp::launch::store;

namespace {
std::string payload_of(const std::string& frame) {
  FrameDecoder d;
  d.feed(frame);
  auto p = d.next();
  REQUIRE(p);
  REQUIRE_FALSE(d.next());
  return *p;
}
std::string frame_of(const std::string& payload) {
  const auto n = static_cast<uint32_t>(payload.size());
  std::string f{static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                static_cast<char>(n)};
  return f + payload;
}
Request sample(Op op) {
  Request q;
  q.op = op;
  switch (op) {
    case Op::kSet:
      q.keys = {"k"};
      q.values = {std::string("v\0\xff", 3)};
      break;
    case Op::kGet:
      q.keys = {"k"};
      q.timeout_ms = 1500;
      break;
    case Op::kAdd:
      q.keys = {"counter"};
      q.delta = -(int64_t{1} << 40);
      break;
    case Op::kCompareSet:
      q.keys = {"k"};
      q.values = {"", "new"};
      break;
    case Op::kAddOnce:
      q.keys = {"counter"};
      q.values = {"7"};
      q.delta = 1;
      break;
    case Op::kWait:
    case Op::kMultiGet:
      q.keys = {"a", "b", ""};
      q.timeout_ms = 0xffffffffu;
      break;
    case Op::kCheck: q.keys = {"a"}; break;
    case Op::kDelete:
    case Op::kTryGet: q.keys = {"x"}; break;
    case Op::kMultiSet:
      q.keys = {"a", "b"};
      q.values = {"1", std::string(100000, 'z')};
      break;
    default: break;
  }
  return q;
}
}  // namespace

TEST_CASE("codec: every request op round-trips") {
  for (Op op : {Op::kSet, Op::kGet, Op::kAdd, Op::kCompareSet, Op::kWait, Op::kCheck, Op::kDelete, Op::kMultiGet,
                Op::kMultiSet, Op::kTryGet, Op::kPing, Op::kGoodbye, Op::kAddOnce}) {
    INFO(op_name(op));
    const Request q = sample(op);
    CHECK(decode_request(payload_of(encode_request(q))) == q);
  }
}

TEST_CASE("codec: responses, greeting and hello round-trip") {
  Response r;
  r.op = Op::kMultiGet;
  r.status = Status::kTimeout;
  r.flag = true;
  r.number = -7;
  r.values = {"missing/1", ""};
  r.message = "why";
  CHECK(decode_response(payload_of(encode_response(r))) == r);

  Greeting g;
  g.auth_required = true;
  g.nonce = std::string(kNonceBytes, '\x07');
  const Greeting g2 = decode_greeting(payload_of(encode_greeting(g)));
  CHECK(g2.magic == kMagic);
  CHECK(g2.version == kProtocolVersion);
  CHECK(g2.auth_required);
  CHECK(g2.nonce == g.nonce);

  Hello h;
  h.proof = std::string(32, '\x01');
  h.name = "node3";
  h.heartbeat_ms = 3000;
  const Hello h2 = decode_hello(payload_of(encode_hello(h)));
  CHECK(h2.proof == h.proof);
  CHECK(h2.name == "node3");
  CHECK(h2.heartbeat_ms == 3000);
  CHECK(h2.version == kProtocolVersion);
}

TEST_CASE("codec: frame header is a big-endian payload length") {
  Request q;
  q.op = Op::kPing;
  const std::string f = encode_request(q);
  const size_t n = f.size() - 4;
  CHECK(f[0] == 0);
  CHECK(f[1] == 0);
  CHECK(static_cast<uint8_t>(f[2]) == (n >> 8));
  CHECK(static_cast<uint8_t>(f[3]) == (n & 0xff));
  CHECK(static_cast<uint8_t>(f[4]) == static_cast<uint8_t>(Op::kPing));
}

TEST_CASE("codec: FrameDecoder reassembles frames fed one byte at a time") {
  std::string stream;
  for (int i = 0; i < 5; ++i) stream += encode_request(sample(Op::kMultiSet));
  FrameDecoder d;
  int frames = 0;
  for (char c : stream) {
    d.feed(&c, 1);
    while (auto p = d.next()) {
      CHECK(decode_request(*p) == sample(Op::kMultiSet));
      ++frames;
    }
  }
  CHECK(frames == 5);
  CHECK_FALSE(d.mid_frame());
}

TEST_CASE("codec: oversized and empty frames are refused from their header alone") {
  FrameDecoder d(1024);
  const std::string header{0, 0, 4, 1};  // 1025 bytes announced, nothing else sent
  CHECK_THROWS_WITH(d.feed(header), Catch::Contains("1025 bytes exceeds the maximum of 1024"));

  FrameDecoder big;  // default 16 MiB
  CHECK_THROWS_AS(big.feed(std::string{'\x01', 0, 0, 1}), ProtocolError);
  FrameDecoder at_limit;
  CHECK_NOTHROW(at_limit.feed(std::string{'\x01', 0, 0, 0}));  // exactly 16 MiB: allowed
  CHECK(at_limit.mid_frame());

  FrameDecoder empty;
  CHECK_THROWS_WITH(empty.feed(std::string(4, '\0')), Catch::Contains("zero length"));

  // An oversized header behind a valid frame in the same read is caught too.
  FrameDecoder second(64);
  Request q;
  q.op = Op::kPing;
  CHECK_THROWS_AS(second.feed(encode_request(q) + std::string{0, 0, 1, 0}), ProtocolError);
}

TEST_CASE("codec: truncated payloads are rejected at every cut") {
  const std::string full = payload_of(encode_request(sample(Op::kCompareSet)));
  for (size_t cut = 0; cut < full.size(); ++cut) {
    INFO("cut at " << cut);
    CHECK_THROWS_AS(decode_request(full.substr(0, cut)), ProtocolError);
  }
  const std::string resp = payload_of(encode_response(Response{}));
  for (size_t cut = 0; cut < resp.size(); ++cut) CHECK_THROWS_AS(decode_response(resp.substr(0, cut)), ProtocolError);
}

TEST_CASE("codec: malformed requests are rejected with a reason") {
  const std::string ok = payload_of(encode_request(sample(Op::kSet)));
  CHECK_THROWS_WITH(decode_request(ok + "x"), Catch::Contains("trailing"));

  std::string unknown = ok;
  unknown[0] = static_cast<char>(kLastOp + 1);
  CHECK_THROWS_WITH(decode_request(unknown), Catch::Contains("unknown opcode"));
  unknown[0] = 0;
  CHECK_THROWS_WITH(decode_request(unknown), Catch::Contains("unknown opcode"));

  Request wrong_shape;
  wrong_shape.op = Op::kSet;
  wrong_shape.keys = {"only-a-key"};
  CHECK_THROWS_WITH(decode_request(payload_of(encode_request(wrong_shape))),
                    Catch::Contains("SET with 1 keys and 0 values"));
  Request multi;
  multi.op = Op::kMultiSet;
  multi.keys = {"a", "b"};
  multi.values = {"1"};
  CHECK_THROWS_AS(decode_request(payload_of(encode_request(multi))), ProtocolError);

  // HELLO is only valid as the first frame.
  CHECK_THROWS_WITH(decode_request(payload_of(encode_hello(Hello{}))), Catch::Contains("first frame"));

  // A list that claims more items than bytes left is refused before reserving memory.
  std::string huge_list = ok.substr(0, 1 + 4 + 8) + std::string{'\x7f', '\xff', '\xff', '\xff'};
  CHECK_THROWS_WITH(decode_request(huge_list), Catch::Contains("announces"));
  // A string that claims more bytes than are left.
  std::string huge_string = ok.substr(0, 1 + 4 + 8) + std::string{0, 0, 0, 1} + std::string{'\x7f', 0, 0, 0};
  CHECK_THROWS_WITH(decode_request(huge_string), Catch::Contains("truncated"));
}

TEST_CASE("codec: wrong magic is rejected, the version is left to the caller") {
  Hello h;
  h.magic = 0x12345678;
  CHECK_THROWS_WITH(decode_hello(payload_of(encode_hello(h))), Catch::Contains("magic"));
  Greeting g;
  g.magic = 0x3C85F7CE;  // c10d's VALIDATE magic: not us
  CHECK_THROWS_WITH(decode_greeting(payload_of(encode_greeting(g))), Catch::Contains("magic"));

  Hello v2;
  v2.version = kProtocolVersion + 1;
  CHECK(decode_hello(payload_of(encode_hello(v2))).version == kProtocolVersion + 1);
  // A HELLO that is really another op.
  Request q;
  q.op = Op::kSet;
  q.keys = {"k"};
  q.values = {"v"};
  CHECK_THROWS_WITH(decode_hello(payload_of(encode_request(q))), Catch::Contains("must be HELLO"));
  CHECK_THROWS_AS(decode_hello(frame_of("")), ProtocolError);
}

TEST_CASE("codec: response status and flag bytes are validated") {
  std::string p = payload_of(encode_response(Response{}));
  p[1] = 9;
  CHECK_THROWS_WITH(decode_response(p), Catch::Contains("unknown status"));
  p[1] = 0;
  p[2] = 2;
  CHECK_THROWS_WITH(decode_response(p), Catch::Contains("flag"));
}

TEST_CASE("codec: encode_values_reply writes what encode_response writes for the same values") {
  const std::string a = "x", b(70000, 'y'), c;
  Response r;
  r.op = Op::kMultiGet;
  r.values = {a, b, c};
  CHECK(encode_values_reply(Op::kMultiGet, {&a, &b, &c}) == encode_response(r));
  Response empty;
  empty.op = Op::kGet;
  CHECK(encode_values_reply(Op::kGet, {}) == encode_response(empty));
}
