// The workers' store's pure parts: the c10d wire decoder for both dialects (detection,
// every request type, bytes arriving one at a time, truncated, oversized and unknown input)
// and the key space's replies, waits, watches and queues.
#include <catch2/catch.hpp>

#include <cstring>

#include "launcher/c10d/key_space.hpp"
#include "launcher/c10d/server.hpp"
#include "launcher/c10d/wire.hpp"

using namespace ddp::launch::c10d;

namespace {
Request req(Op op, std::vector<std::string> keys = {}, std::vector<std::string> values = {}, int64_t delta = 0) {
  Request r;
  r.op = op;
  r.keys = std::move(keys);
  r.values = std::move(values);
  r.delta = delta;
  return r;
}

Request barrier(const std::string& key, int64_t world_size) {
  Request r = req(Op::kBarrier, {key});
  r.world_size = world_size;
  return r;
}

std::string validate() {
  Request r = req(Op::kValidate);
  r.nonce = kValidationMagic;
  return encode_request(Dialect::kTorch2, r);
}

// Feeds `bytes` one byte at a time: every prefix must ask for more, the last byte completes it.
Request decode_bytewise(Decoder& d, const std::string& bytes) {
  Request r;
  for (size_t i = 0; i + 1 < bytes.size(); ++i) {
    d.feed(&bytes[i], 1);
    REQUIRE(d.next(r) == Decoder::Status::kNeedMore);
  }
  d.feed(&bytes.back(), 1);
  REQUIRE(d.next(r) == Decoder::Status::kRequest);
  CHECK(d.buffered() == 0);
  return r;
}

std::vector<Request> every_request(Dialect d) {
  std::vector<Request> all = {req(Op::kSet, {"k"}, {"v"}), req(Op::kCompareSet, {"k"}, {"old", "new"}),
                              req(Op::kGet, {"k"}),        req(Op::kAdd, {"n"}, {}, -5),
                              req(Op::kCheck, {"a", "b"}), req(Op::kWait, {"a", "b", "c"}),
                              req(Op::kNumKeys),           req(Op::kDeleteKey, {"k"})};
  if (d == Dialect::kTorch113) {
    all.push_back(req(Op::kWatchKey, {"k"}));
  } else {
    Request ping = req(Op::kPing);
    ping.nonce = 4242;
    all.insert(all.end(), {req(Op::kAppend, {"k"}, {"more"}), req(Op::kMultiGet, {"a", "b"}),
                           req(Op::kMultiSet, {"a", "b"}, {"1", "2"}), req(Op::kCancelWait), ping,
                           req(Op::kQueuePush, {"q"}, {"item"}), req(Op::kQueuePop, {"q"}), req(Op::kQueueLen, {"q"}),
                           req(Op::kListKeys), barrier("/b", 4)});
  }
  return all;
}

void check_same(const Request& a, const Request& b) {
  CHECK(a.op == b.op);
  CHECK(a.keys == b.keys);
  CHECK(a.values == b.values);
  CHECK(a.delta == b.delta);
  CHECK(a.nonce == b.nonce);
  CHECK(a.world_size == b.world_size);
}

Decoder::Status decode_all(const std::string& bytes, Decoder& d, Request& r) {
  d.feed(bytes.data(), bytes.size());
  return d.next(r);
}

std::string raw_u64(uint64_t v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}
}  // namespace

TEST_CASE("c10d wire: a torch 1.13 client is recognised by its first request, every type decodes") {
  for (const Request& sent : every_request(Dialect::kTorch113)) {
    INFO(op_name(sent.op));
    Decoder d;
    check_same(decode_bytewise(d, encode_request(Dialect::kTorch113, sent)), sent);
    CHECK(d.dialect() == Dialect::kTorch113);
  }
}

TEST_CASE("c10d wire: a torch 2.x client opens with VALIDATE, then every type decodes") {
  for (const Request& sent : every_request(Dialect::kTorch2)) {
    INFO(op_name(sent.op));
    Decoder d;
    Request got = decode_bytewise(d, validate());
    CHECK(got.op == Op::kValidate);
    CHECK(d.dialect() == Dialect::kTorch2);
    check_same(decode_bytewise(d, encode_request(Dialect::kTorch2, sent)), sent);
  }
}

TEST_CASE("c10d wire: the torch 2.x opcodes are c10d's QueryType, in its order (torch 2.15)") {
  // tests/c10d/check_requests.py compares the same table with the installed wheel's header.
  const std::vector<std::string> torch = {"VALIDATE",  "SET",       "COMPARE_SET", "GET",        "ADD",
                                          "CHECK",     "WAIT",      "GETNUMKEYS",  "DELETE_KEY", "APPEND",
                                          "MULTI_GET", "MULTI_SET", "CANCEL_WAIT", "PING",       "QUEUE_PUSH",
                                          "QUEUE_POP", "QUEUE_LEN", "LIST_KEYS",   "BARRIER"};
  std::vector<std::string> ours;
  for (uint8_t code = 0; auto op = op_of_code(Dialect::kTorch2, code); ++code) ours.emplace_back(op_name(*op));
  CHECK(ours == torch);
  CHECK_FALSE(op_of_code(Dialect::kTorch113, 9));
}

TEST_CASE("c10d wire: LIST_KEYS and BARRIER byte for byte, as torch 2.x's client sends them") {
  Decoder d;
  Request r;
  REQUIRE(decode_all(validate(), d, r) == Decoder::Status::kRequest);
  // BARRIER: opcode 18, the key (uint64 length + bytes), the world size (int64).
  int64_t world = 3;
  std::string ws(8, '\0');
  std::memcpy(ws.data(), &world, 8);
  const std::string barrier_bytes = std::string(1, '\x12') + raw_u64(3) + "/b1" + ws;
  CHECK(encode_request(Dialect::kTorch2, barrier("/b1", 3)) == barrier_bytes);
  check_same(decode_bytewise(d, barrier_bytes), barrier("/b1", 3));
  // LIST_KEYS: the opcode alone.
  CHECK(encode_request(Dialect::kTorch2, req(Op::kListKeys)) == std::string(1, '\x11'));
  check_same(decode_bytewise(d, std::string(1, '\x11')), req(Op::kListKeys));
  // Its reply: int64 count, then each key as uint64 length + bytes.
  KeySpace s;
  std::vector<Outgoing> out;
  s.apply(1, req(Op::kSet, {"/k"}, {"v"}), out);
  s.apply(1, req(Op::kListKeys), out);
  CHECK(out.at(0).bytes == std::string("\x01\0\0\0\0\0\0\0", 8) + raw_u64(2) + "/k");
}

TEST_CASE("c10d wire: a 1.13 SET (opcode 0) is not mistaken for VALIDATE") {
  Decoder d;
  Request r;
  CHECK(decode_all(encode_request(Dialect::kTorch113, req(Op::kSet, {"init/"}, {"1"})), d, r) ==
        Decoder::Status::kRequest);
  CHECK(d.dialect() == Dialect::kTorch113);
  CHECK(r.op == Op::kSet);
}

TEST_CASE("c10d wire: pipelined requests come out one by one") {
  Decoder d;
  const std::string two = encode_request(Dialect::kTorch113, req(Op::kAdd, {"init/"}, {}, 1)) +
                          encode_request(Dialect::kTorch113, req(Op::kGet, {"x"}));
  Request r;
  CHECK(decode_all(two, d, r) == Decoder::Status::kRequest);
  CHECK(r.op == Op::kAdd);
  CHECK(d.next(r) == Decoder::Status::kRequest);
  CHECK(r.op == Op::kGet);
  CHECK(d.next(r) == Decoder::Status::kNeedMore);
}

TEST_CASE("c10d wire: garbage, unknown opcodes and oversized lengths are errors that say what was wrong") {
  Request r;
  SECTION("an HTTP request") {
    Decoder d;
    CHECK(decode_all("GET / HTTP/1.1\r\n", d, r) == Decoder::Status::kError);
    CHECK_THAT(d.error(), Catch::Contains("not a c10d TCPStore client") && Catch::Contains("'G'"));
    CHECK(d.next(r) == Decoder::Status::kError);  // stays failed
  }
  SECTION("a 2.x opcode without VALIDATE") {
    for (char first : {'\x0d', '\x12'}) {
      Decoder d;
      CHECK(decode_all(std::string(1, first) + "abcd", d, r) == Decoder::Status::kError);
      CHECK_THAT(d.error(), Catch::Contains("VALIDATE"));
    }
    Decoder d;  // past the last opcode: not c10d at all
    CHECK(decode_all(std::string(1, '\x13') + "abcd", d, r) == Decoder::Status::kError);
    CHECK_THAT(d.error(), Catch::Contains("not a c10d TCPStore client: first byte 0x13"));
  }
  SECTION("an unknown opcode after VALIDATE") {
    Decoder d;
    CHECK(decode_all(validate(), d, r) == Decoder::Status::kRequest);
    CHECK(decode_all(std::string(1, '\x40'), d, r) == Decoder::Status::kError);
    CHECK_THAT(d.error(), Catch::Contains("unknown opcode 64 for a torch 2.x client"));
  }
  SECTION("a second VALIDATE") {
    Decoder d;
    CHECK(decode_all(validate() + validate(), d, r) == Decoder::Status::kRequest);
    CHECK(d.next(r) == Decoder::Status::kError);
    CHECK_THAT(d.error(), Catch::Contains("second VALIDATE"));
  }
  SECTION("an opcode 1.13 does not have") {
    Decoder d;
    CHECK(decode_all(encode_request(Dialect::kTorch113, req(Op::kGet, {"k"})) + std::string(1, '\x09'), d, r) ==
          Decoder::Status::kRequest);
    CHECK(d.next(r) == Decoder::Status::kError);
    CHECK_THAT(d.error(), Catch::Contains("unknown opcode 9 for a torch 1.13 client"));
  }
  SECTION("an oversized key is refused as soon as its length arrives") {
    Decoder d(Limits{16, 1024, 8, 4096});
    CHECK(decode_all(std::string(1, '\x02') + raw_u64(17), d, r) == Decoder::Status::kError);
    CHECK_THAT(d.error(), Catch::Contains("GET: a key of 17 bytes, over the limit of 16"));
  }
  SECTION("an oversized value") {
    Decoder d(Limits{16, 1024, 8, 4096});
    CHECK(decode_all(std::string(1, '\x00') + raw_u64(1) + "k" + raw_u64(1u << 30), d, r) == Decoder::Status::kError);
    CHECK_THAT(d.error(), Catch::Contains("SET: a value of 1073741824 bytes"));
  }
  SECTION("too many keys") {
    Decoder d(Limits{16, 1024, 8, 4096});
    CHECK(decode_all(std::string(1, '\x05') + raw_u64(9), d, r) == Decoder::Status::kError);
    CHECK_THAT(d.error(), Catch::Contains("WAIT: 9 keys, over the limit of 8"));
  }
  SECTION("a wrong magic after opcode 0 reads as a 1.13 SET whose key is too long") {
    Decoder d;
    CHECK(decode_all(std::string("\x00\xff\xff\xff\xff\xff\xff\xff\xff", 9), d, r) == Decoder::Status::kError);
    CHECK(d.dialect() == Dialect::kTorch113);
  }
  SECTION("a truncated request only asks for more") {
    Decoder d;
    std::string bytes = encode_request(Dialect::kTorch113, req(Op::kCompareSet, {"key"}, {"a", "b"}));
    bytes.pop_back();
    CHECK(decode_all(bytes, d, r) == Decoder::Status::kNeedMore);
    CHECK(d.buffered() == bytes.size());
  }
}

namespace {
std::string out_for(const std::vector<Outgoing>& out, ConnId id) {
  std::string all;
  for (const auto& o : out)
    if (o.to == id) all += o.bytes;
  return all;
}
}  // namespace

TEST_CASE("c10d key space: set, get, add, compare-set, check, delete and key counts answer as c10d does") {
  KeySpace s;
  std::vector<Outgoing> out;
  CHECK_FALSE(s.apply(1, req(Op::kSet, {"a"}, {"x"}), out));
  CHECK(out.empty());  // SET has no reply
  CHECK_FALSE(s.apply(1, req(Op::kGet, {"a"}), out));
  CHECK(out_for(out, 1) == encode_bytes("x"));
  out.clear();
  s.apply(1, req(Op::kAdd, {"n"}, {}, 3), out);
  s.apply(1, req(Op::kAdd, {"n"}, {}, -1), out);
  CHECK(out_for(out, 1) == encode_i64(3) + encode_i64(2));
  CHECK(*s.find("n") == "2");
  out.clear();
  s.apply(1, req(Op::kCompareSet, {"a"}, {"wrong", "y"}), out);  // mismatch: the current value
  s.apply(1, req(Op::kCompareSet, {"a"}, {"x", "y"}), out);      // match: the new one
  s.apply(1, req(Op::kCompareSet, {"new"}, {"", "z"}), out);     // missing, expected missing: created
  s.apply(1, req(Op::kCompareSet, {"none"}, {"e", "z"}), out);   // missing, expected set: the expectation
  CHECK(out_for(out, 1) == encode_bytes("x") + encode_bytes("y") + encode_bytes("z") + encode_bytes("e"));
  CHECK_FALSE(s.find("none"));
  out.clear();
  s.apply(1, req(Op::kCheck, {"a", "n"}), out);
  s.apply(1, req(Op::kCheck, {"a", "missing"}), out);
  s.apply(1, req(Op::kNumKeys), out);
  s.apply(1, req(Op::kDeleteKey, {"a"}), out);
  s.apply(1, req(Op::kDeleteKey, {"a"}), out);
  CHECK(out_for(out, 1) ==
        encode_u8(kCheckReady) + encode_u8(kCheckNotReady) + encode_i64(3) + encode_i64(1) + encode_i64(0));
  out.clear();
  s.apply(1, req(Op::kSet, {"text"}, {"abc"}), out);
  const auto error = s.apply(1, req(Op::kAdd, {"text"}, {}, 1), out);
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("ADD on key 'text'") && Catch::Contains("not an integer"));
}

TEST_CASE("c10d key space: WAIT parks until every key exists; CANCEL_WAIT and a new request end it") {
  KeySpace s;
  std::vector<Outgoing> out;
  s.apply(1, req(Op::kWait, {"a", "b", "a"}), out);
  s.apply(2, req(Op::kWait, {"b"}), out);
  CHECK(out.empty());
  CHECK(s.parked() == 2);
  s.apply(3, req(Op::kSet, {"b"}, {"1"}), out);
  CHECK(out_for(out, 2) == encode_u8(kStopWaiting));
  CHECK(out_for(out, 1).empty());
  s.apply(3, req(Op::kAdd, {"a"}, {}, 1), out);
  CHECK(out_for(out, 1) == encode_u8(kStopWaiting));
  CHECK(s.parked() == 0);
  out.clear();
  s.apply(1, req(Op::kWait, {"a"}), out);  // already there: at once
  CHECK(out_for(out, 1) == encode_u8(kStopWaiting));
  out.clear();
  s.apply(1, req(Op::kWait, {"never"}), out);
  s.apply(1, req(Op::kCancelWait), out);
  CHECK(out_for(out, 1) == encode_u8(kWaitCanceled));
  CHECK(s.parked() == 0);
  s.apply(2, req(Op::kWait, {"never"}), out);
  s.apply(2, req(Op::kGet, {"a"}), out);  // a 1.13 client that timed out moves on
  CHECK(s.parked() == 0);
  s.apply(4, req(Op::kWait, {"gone"}), out);
  s.disconnect(4);
  out.clear();
  s.apply(3, req(Op::kSet, {"gone"}, {"1"}), out);
  s.apply(3, req(Op::kSet, {"never"}, {"1"}), out);
  CHECK(out.empty());
}

TEST_CASE("c10d key space: 20000 ranks parked on one key; those that leave are not woken, the rest are, once") {
  KeySpace s;
  std::vector<Outgoing> out;
  constexpr ConnId kRanks = 20000;
  for (ConnId id = 1; id <= kRanks; ++id) s.apply(id, req(Op::kWait, {"release"}), out);
  CHECK(s.parked() == kRanks);
  for (ConnId id = 2; id <= kRanks; id += 1000) s.disconnect(id);  // 20 ranks gone while waiting
  s.apply(1, req(Op::kCancelWait), out);                           // and one gave up
  CHECK(s.parked() == kRanks - 21);
  out.clear();
  s.apply(kRanks + 1, req(Op::kSet, {"release"}, {"1"}), out);
  CHECK(out.size() == kRanks - 21);
  CHECK(s.parked() == 0);
  std::vector<bool> woken(kRanks + 1, false);
  for (const auto& o : out) {
    CHECK(o.bytes == encode_u8(kStopWaiting));
    CHECK_FALSE(woken.at(o.to));
    woken.at(o.to) = true;
  }
  CHECK_FALSE(woken[1]);
  CHECK_FALSE(woken[2]);
  CHECK(woken[3]);
}

TEST_CASE("c10d key space: 1.13 watchers hear of creates, updates and deletes") {
  KeySpace s;
  std::vector<Outgoing> out;
  s.apply(7, req(Op::kWatchKey, {"k"}), out);
  CHECK(out_for(out, 7) == encode_u8(kKeyCallbackRegistered));
  out.clear();
  s.apply(1, req(Op::kSet, {"k"}, {"a"}), out);
  s.apply(1, req(Op::kAdd, {"k2"}, {}, 1), out);  // another key: nothing
  s.apply(1, req(Op::kCompareSet, {"k"}, {"a", "b"}), out);
  s.apply(1, req(Op::kDeleteKey, {"k"}), out);
  CHECK(out_for(out, 7) == encode_watch_event(kKeyCreated, "k", "", "a") +
                               encode_watch_event(kKeyUpdated, "k", "a", "b") +
                               encode_watch_event(kKeyDeleted, "k", "b", ""));
}

TEST_CASE("c10d key space: append, multi-get/set, ping and queues (torch 2.x)") {
  KeySpace s;
  std::vector<Outgoing> out;
  Request ping = req(Op::kPing);
  ping.nonce = 99;
  s.apply(1, ping, out);
  s.apply(1, req(Op::kAppend, {"a"}, {"x"}), out);
  s.apply(1, req(Op::kAppend, {"a"}, {"y"}), out);
  s.apply(1, req(Op::kMultiSet, {"b", "c"}, {"1", "2"}), out);
  s.apply(1, req(Op::kMultiGet, {"a", "c", "zz"}), out);
  CHECK(out_for(out, 1) == encode_u32(99) + encode_bytes("xy") + encode_bytes("2") + encode_bytes(""));
  out.clear();
  s.apply(2, req(Op::kWait, {"q"}), out);
  s.apply(3, req(Op::kWait, {"q"}), out);
  s.apply(1, req(Op::kQueuePush, {"q"}, {"first"}), out);  // wakes one waiter
  CHECK(out_for(out, 2) == encode_u8(kStopWaiting));
  CHECK(out_for(out, 3).empty());
  s.apply(1, req(Op::kQueuePush, {"q"}, {"second"}), out);
  CHECK(out_for(out, 3) == encode_u8(kStopWaiting));
  out.clear();
  s.apply(1, req(Op::kQueueLen, {"q"}), out);
  s.apply(1, req(Op::kCheck, {"q"}), out);
  s.apply(1, req(Op::kQueuePop, {"q"}), out);
  s.apply(1, req(Op::kQueuePop, {"q"}), out);
  s.apply(1, req(Op::kQueuePop, {"q"}), out);
  CHECK(out_for(out, 1) == encode_i64(2) + encode_u8(kCheckReady) + encode_i64(2) + encode_bytes("first") +
                               encode_i64(1) + encode_bytes("second") + encode_i64(0));
}

TEST_CASE("c10d server: with a rendezvous token only loopback, this host and the round's nodes are let in") {
  const std::vector<std::string> nodes = {"10.0.0.2", "10.0.0.3"};
  CHECK(peer_allowed("127.0.0.1", "127.0.0.1", nodes));
  CHECK(peer_allowed("127.0.1.1", "10.0.0.1", nodes));  // all of 127/8
  CHECK(peer_allowed("::1", "::1", nodes));
  CHECK(peer_allowed("10.0.0.1", "10.0.0.1", nodes));         // this host's own address
  CHECK(peer_allowed("10.0.0.3", "10.0.0.1", nodes));         // a node of the round
  CHECK(peer_allowed("::ffff:10.0.0.2", "10.0.0.1", nodes));  // IPv4-mapped
  CHECK_FALSE(peer_allowed("10.0.0.9", "10.0.0.1", nodes));
  CHECK_FALSE(peer_allowed("10.0.0.9", "10.0.0.1", {}));
  CHECK_FALSE(peer_allowed("not an address", "10.0.0.1", nodes));
}

TEST_CASE("c10d key space: BARRIER counts arrivals in the key and parks them until the world size is reached") {
  KeySpace s;
  std::vector<Outgoing> out;
  s.apply(9, req(Op::kWait, {"/b"}), out);  // a WAIT on the barrier's key
  s.apply(1, barrier("/b", 3), out);
  CHECK(out.empty());  // parked; the first arrival creates the key but wakes nobody (c10d)
  CHECK(*s.find("/b") == "1");
  s.apply(2, barrier("/b", 3), out);
  CHECK(out.empty());
  CHECK(s.parked() == 3);
  s.apply(3, barrier("/b", 3), out);  // the last arrival: told first, then everyone parked on the key
  REQUIRE(out.size() == 4);
  CHECK(out[0].to == 3);
  CHECK(out_for(out, 1) == encode_u8(kStopWaiting));
  CHECK(out_for(out, 2) == encode_u8(kStopWaiting));
  CHECK(out_for(out, 3) == encode_u8(kStopWaiting));
  CHECK(out_for(out, 9) == encode_u8(kStopWaiting));
  CHECK(s.parked() == 0);
  CHECK(*s.find("/b") == "3");  // the counter stays: a reused key passes at once
  out.clear();
  s.apply(1, barrier("/b", 3), out);
  CHECK(out_for(out, 1) == encode_u8(kStopWaiting));
  CHECK(*s.find("/b") == "4");

  SECTION("a world size of 1, 0 or below passes at once") {
    for (int64_t world : {1, 0, -1}) {
      out.clear();
      s.apply(1, barrier("/w" + std::to_string(world), world), out);
      CHECK(out_for(out, 1) == encode_u8(kStopWaiting));
    }
  }
  SECTION("a parked arrival is ended by CANCEL_WAIT (its client's timeout) and keeps its count") {
    out.clear();
    s.apply(1, barrier("/t", 2), out);
    s.apply(1, req(Op::kCancelWait), out);
    CHECK(out_for(out, 1) == encode_u8(kWaitCanceled));
    CHECK(*s.find("/t") == "1");
    out.clear();
    s.apply(2, barrier("/t", 2), out);  // counts the cancelled arrival
    CHECK(out_for(out, 2) == encode_u8(kStopWaiting));
    CHECK(out_for(out, 1).empty());
  }
  SECTION("a SET of the key wakes the parked arrivals (c10d does the same)") {
    out.clear();
    s.apply(1, barrier("/s", 5), out);
    s.apply(2, req(Op::kSet, {"/s"}, {"7"}), out);
    CHECK(out_for(out, 1) == encode_u8(kStopWaiting));
  }
  SECTION("a value that is not a counter is refused, as ADD's") {
    s.apply(1, req(Op::kSet, {"/text"}, {"abc"}), out);
    const auto error = s.apply(1, barrier("/text", 2), out);
    REQUIRE(error);
    CHECK_THAT(*error, Catch::Contains("BARRIER on key '/text'") && Catch::Contains("not an integer"));
  }
  SECTION("a disconnected arrival is forgotten") {
    out.clear();
    s.apply(1, barrier("/d", 3), out);
    s.disconnect(1);
    CHECK(s.parked() == 0);
    s.apply(2, barrier("/d", 3), out);
    s.apply(3, barrier("/d", 3), out);
    CHECK(out_for(out, 3) == encode_u8(kStopWaiting));
    CHECK(out_for(out, 2) == encode_u8(kStopWaiting));
  }
}

TEST_CASE("c10d key space: LIST_KEYS names every data key, not the queues") {
  KeySpace s;
  std::vector<Outgoing> out;
  s.apply(1, req(Op::kSet, {"/a"}, {"1"}), out);
  s.apply(1, req(Op::kAdd, {"/n"}, {}, 2), out);
  s.apply(1, req(Op::kQueuePush, {"/q"}, {"item"}), out);
  out.clear();
  s.apply(1, req(Op::kListKeys), out);
  REQUIRE(out.size() == 1);
  const std::string& bytes = out[0].bytes;
  int64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  CHECK(n == 2);
  const bool a_then_n = bytes.substr(8) == encode_bytes("/a") + encode_bytes("/n");
  const bool n_then_a = bytes.substr(8) == encode_bytes("/n") + encode_bytes("/a");
  CHECK((a_then_n || n_then_a));  // any order, as c10d's hash map
  out.clear();
  s.apply(1, req(Op::kDeleteKey, {"/a"}), out);
  s.apply(1, req(Op::kDeleteKey, {"/n"}), out);
  out.clear();
  s.apply(1, req(Op::kListKeys), out);
  CHECK(out_for(out, 1) == encode_i64(0));
}
