// Reconnects: a client whose connection is cut for real (`ss -K`, the kernel destroys the
// socket; needs root and CONFIG_INET_DIAG_DESTROY, else these cases are skipped, 77) while
// the server lives reconnects, re-authenticates and finishes its request; the server
// reports it dropped only if it is not back within its heartbeat timeout. ADD is applied
// once even when sent twice (ADD_ONCE). Without a reconnect window a cut is final.
#include <catch2/catch.hpp>

#include <atomic>
#include <thread>

#include "launcher/store/codec.hpp"
#include "tests/store/fixture.hpp"
#include "tests/store/raw_peer.hpp"
#include "tests/support/connections.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch::store;
using namespace ddp::launch::store::test;
using ddp::test::cut_connections;
using ddp::test::require_cut_connections;

namespace {

std::string dropped(const std::string& name) { return std::string(kDroppedPrefix) + name; }

ClientOptions reconnecting(const std::string& name, uint32_t heartbeat_ms) {
  ClientOptions o;
  o.name = name;
  o.heartbeat_timeout_ms = heartbeat_ms;
  o.reconnect_window = std::chrono::milliseconds(heartbeat_ms);
  o.connect_timeout = 5s;
  o.request_timeout = 5s;
  return o;
}

Request add_once(const std::string& key, const std::string& id) {
  Request q;
  q.op = Op::kAddOnce;
  q.keys = {key};
  q.values = {id};
  q.delta = 1;
  return q;
}

int64_t raw_call_number(RawPeer& peer, const Request& q) {
  REQUIRE(peer.send(encode_request(q)));
  auto frame = peer.read_frame(5s);
  REQUIRE(frame);
  return decode_response(*frame).number;
}

}  // namespace

TEST_CASE("reconnect: a cut mid-wait reconnects and the wait still returns the value; nobody is dropped") {
  require_cut_connections();
  LocalServer srv;
  auto node = srv.client(reconnecting("node1", 2000));
  std::thread setter([&] {
    std::this_thread::sleep_for(300ms);
    REQUIRE(cut_connections(srv.server.port()));
    std::this_thread::sleep_for(300ms);
    auto other = srv.client();
    other->set("late", "value");
  });
  const std::string got = node->get("late", 10s);
  setter.join();
  CHECK(got == "value");
  node->set("after", "1");  // the connection works on
  CHECK(node->add("n", 1) == 1);
  // The server's grace (2 s) passes without a drop: the node came back in time. (The
  // watcher connects after the cut, which destroys every connection to the port.)
  for (int i = 0; i < 30; ++i) {  // 3 s of heartbeats, past the grace
    node->ping();
    std::this_thread::sleep_for(100ms);
  }
  auto watcher = srv.client();
  CHECK_FALSE(watcher->check({dropped("node1")}));
  node->close_gracefully();
}

TEST_CASE("reconnect: cut after cut, every request of a busy client succeeds exactly once") {
  require_cut_connections();
  LocalServer srv;
  auto node = srv.client(reconnecting("busy", 3000));
  std::atomic<bool> done{false};
  std::thread cutter([&] {
    while (!done) {
      cut_connections(srv.server.port());
      std::this_thread::sleep_for(50ms);
    }
  });
  for (int i = 1; i <= 300; ++i) {
    node->set("k" + std::to_string(i), "v");
    CHECK(node->add("counter", 1) == i);  // never applied twice, never lost
  }
  done = true;
  cutter.join();
  auto check = srv.client();
  CHECK(check->get("counter", 1s) == "300");
  CHECK_FALSE(check->check({dropped("busy")}));
}

TEST_CASE("reconnect: a client not back within its heartbeat timeout is dropped") {
  require_cut_connections();
  ServerOptions o = local_options();
  LocalServer srv(o);
  RawPeer peer(srv.server.port());
  peer.handshake("gone", 500);
  REQUIRE(cut_connections(srv.server.port()));  // the raw peer never reconnects
  auto watcher = srv.client();
  CHECK_THAT(watcher->get(dropped("gone"), 10s), Catch::Contains("not back within 500 ms"));
}

TEST_CASE("reconnect: without a reconnect window a cut is final") {
  require_cut_connections();
  LocalServer srv;
  ClientOptions o;
  o.connect_timeout = 5s;
  o.request_timeout = 5s;
  auto node = srv.client(o);
  node->set("a", "1");
  REQUIRE(cut_connections(srv.server.port()));
  CHECK_THROWS_AS(node->set("b", "2"), StoreUnavailable);
}

TEST_CASE("reconnect: a store that is gone (refused) ends the reconnect at once") {
  auto srv = std::make_unique<LocalServer>();
  auto node = srv->client(reconnecting("orphan", 20000));
  node->set("a", "1");
  srv.reset();
  Stopwatch sw;
  CHECK_THROWS_WITH(node->set("b", "2"), Catch::Contains("the store is gone"));
  CHECK(sw.seconds() < 15);  // well inside the 20 s window: refused is final
}

TEST_CASE("ADD_ONCE: a named client's repeated request id is applied once") {
  LocalServer srv;
  RawPeer peer(srv.server.port());
  peer.handshake("adder", 10000);
  CHECK(raw_call_number(peer, add_once("c", "1")) == 1);
  CHECK(raw_call_number(peer, add_once("c", "1")) == 1);  // a retry: the first result
  CHECK(raw_call_number(peer, add_once("c", "2")) == 2);
  RawPeer anonymous(srv.server.port());
  anonymous.handshake();
  CHECK(raw_call_number(anonymous, add_once("c", "2")) == 3);  // no name: no dedupe
  CHECK(srv.client()->get("c", 1s) == "3");
}
