// The store's resource limits against hostile or broken peers, over real loopback sockets:
// the tiny frame limit before HELLO, replies over the frame limit refused with an ERROR,
// backpressure on a client that never reads, 100,000-key requests in linear time, and
// the connection cap (the oldest unauthenticated connection goes first).
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "launcher/store/codec.hpp"
#include "launcher/store/key_table.hpp"
#include "tests/store/fixture.hpp"
#include "tests/store/raw_peer.hpp"

using namespace ddp::launch;
using namespace ddp::launch::store;
using namespace ddp::launch::store::test;

namespace {

// Resident set size of this process (the server runs in it), in MiB.
double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1 << 20);
}

Request request(Op op, std::vector<std::string> keys, uint32_t timeout_ms = 0) {
  Request q;
  q.op = op;
  q.keys = std::move(keys);
  q.timeout_ms = timeout_ms;
  return q;
}

}  // namespace

TEST_CASE("limits: before HELLO a frame over 4 KiB is refused from its header, without a reply") {
  LocalServer srv;  // 16 MiB frames once authenticated
  RawPeer peer(srv.server.port());
  REQUIRE(peer.read_frame(2s));                    // the greeting
  REQUIRE(peer.send(std::string{0, 0x10, 0, 0}));  // 1 MiB announced, none sent
  Stopwatch sw;
  CHECK(peer.drain(5s).empty());
  CHECK(peer.closed());
  CHECK(sw.seconds() < 4.0);  // at once, not at the 10 s HELLO deadline
  // A HELLO at the limit's scale is fine, and so are big frames after it.
  auto c = srv.client();
  c->set("big", std::string(1 << 20, 'b'));
  CHECK(c->get("big", 1s).size() == (1u << 20));
}

TEST_CASE("limits: a reply that would exceed the frame limit is an ERROR and the connection stays") {
  ServerOptions o = local_options();
  o.max_frame_bytes = 64 * 1024;
  LocalServer srv(o);
  auto c = srv.client();
  c->set("v", std::string(40 * 1024, 'v'));
  CHECK_THROWS_WITH(c->multi_get({"v", "v"}, 1s), Catch::Contains("over the store's frame limit of 65536"));
  CHECK(c->get("v", 0ms).size() == 40 * 1024);  // the connection is still fine
  CHECK(c->multi_get({"v"}, 1s)[0].size() == 40 * 1024);
  // The same over a raw socket: the reply frame is small, an ERROR naming the op.
  RawPeer peer(srv.server.port());
  peer.handshake();
  REQUIRE(peer.send(encode_request(request(Op::kMultiGet, {"v", "v", "v"}, 1000))));
  auto reply = peer.read_frame(2s);
  REQUIRE(reply);
  CHECK(reply->size() < 1024);
  const Response r = decode_response(*reply);
  CHECK(r.status == Status::kError);
  CHECK(r.op == Op::kMultiGet);
}

TEST_CASE("limits: a client that never reads its replies stops being read (bounded memory)") {
  ServerOptions o = local_options();
  o.write_timeout = 30s;  // the bound must come from backpressure, not from the deadline
  LocalServer srv(o);
  srv.client()->set("value", std::string(1 << 20, 'x'));
  RawPeer hog(srv.server.port(), 4096);
  hog.handshake();
  const double before = rss_mib();
  constexpr int kRequests = 300;  // 300 MiB of replies for ~12 KiB of requests
  std::string burst;
  for (int i = 0; i < kRequests; ++i) burst += encode_request(request(Op::kTryGet, {"value"}));
  REQUIRE(hog.send(burst));
  std::this_thread::sleep_for(1500ms);
  const double grown = rss_mib() - before;
  INFO("RSS grew by " << grown << " MiB");
  CHECK(grown < 64);  // unbounded: ~300 MiB
  // Meanwhile the store serves others, and the hog gets its replies once it reads.
  auto other = srv.client();
  other->ping();
  for (int i = 0; i < 10; ++i) {  // in order, whole (reading all 300 MiB takes seconds)
    auto frame = hog.read_frame(10s);
    REQUIRE(frame);
    const Response r = decode_response(*frame);
    REQUIRE(r.flag);
    REQUIRE(r.values.at(0).size() == (1u << 20));
  }
}

TEST_CASE("limits: CHECK, WAIT and MULTI_GET on 100,000 keys take linear time") {
  LocalServer srv;
  auto c = srv.client();
  std::vector<std::string> keys;
  for (int i = 0; i < 100000; ++i) keys.push_back("k/" + std::to_string(i));
  Stopwatch sw;
  CHECK_FALSE(c->check(keys));  // all missing, all distinct: the quadratic case
  CHECK_FALSE(c->wait(keys, 0ms));
  std::vector<std::string> dup(100000, "same");
  CHECK_FALSE(c->check(dup));
  std::vector<std::pair<std::string, std::string>> items;
  for (const auto& k : keys) items.emplace_back(k, "1");
  c->multi_set(items);
  CHECK(c->check(keys));
  CHECK(c->multi_get(keys, 1s).size() == keys.size());
  INFO("took " << sw.seconds() << " s");
  CHECK(sw.seconds() < 8.0);  // a complexity check, ~10x above a loaded machine: quadratic takes minutes
}

TEST_CASE("limits: KeyTable::missing lists each missing key once, in the order named") {
  KeyTable t;
  t.set("b", "1");
  CHECK(t.missing({"a", "b", "c", "a", "c", "d"}) == std::vector<std::string>{"a", "c", "d"});
  CHECK(t.value_bytes({"b", "b"}) == 2);
}

TEST_CASE("limits: at the connection cap the oldest unauthenticated connection goes first") {
  ServerOptions o = local_options();
  o.max_connections = 4;
  std::vector<std::string> log;
  std::mutex log_mutex;
  o.log = [&](const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mutex);
    log.push_back(line);
  };
  LocalServer srv(o);
  REQUIRE(srv.server.max_connections() == 4);
  std::vector<std::unique_ptr<RawPeer>> silent;
  for (int i = 0; i < 4; ++i) {
    silent.push_back(std::make_unique<RawPeer>(srv.server.port()));
    REQUIRE(silent.back()->read_frame(2s));  // accepted and greeted
  }
  // Full of silent peers: a real client still gets in, and the oldest silent one is closed.
  auto c = srv.client();
  c->set("in", "1");
  silent[0]->drain(2s);
  CHECK(silent[0]->closed());
  silent[1]->drain(200ms);
  CHECK_FALSE(silent[1]->closed());
  // Full of authenticated clients: a new connection is refused, the others stay.
  std::vector<std::unique_ptr<TcpStoreClient>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(srv.client());
  RawPeer late(srv.server.port());
  CHECK_FALSE(late.read_frame(2s));
  CHECK(late.closed());
  c->ping();
  for (auto& k : clients) k->ping();
  std::lock_guard<std::mutex> lock(log_mutex);
  CHECK_THAT(log.back(), Catch::Contains("all authenticated: refusing"));
}
