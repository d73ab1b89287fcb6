// __dropped__/<name> keys: set when a named client with a heartbeat disappears without
// GOODBYE (closed socket, killed process) or goes silent; never after a clean goodbye.
#include <catch2/catch.hpp>

#include <csignal>
#include <thread>

#include "launcher/store/codec.hpp"
#include "tests/store/fixture.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch::store;
using namespace ddp::launch::store::test;

namespace {
std::string dropped(const std::string& name) { return std::string(kDroppedPrefix) + name; }
ClientOptions named(const std::string& name, uint32_t heartbeat_ms) {
  ClientOptions o;
  o.name = name;
  o.heartbeat_timeout_ms = heartbeat_ms;
  return o;
}
}  // namespace

TEST_CASE("liveness: an abrupt close sets __dropped__/<name> = connection lost") {
  LocalServer srv;
  auto watcher = srv.client();
  auto node = srv.client(named("node1", 5000));
  node->set("x", "1");
  Stopwatch sw;
  node->close_abruptly();
  CHECK(watcher->get(dropped("node1"), 5s) == "connection lost");
  CHECK(sw.seconds() < 1.0);
  CHECK(watcher->add(kDroppedCountKey, 0) == 1);  // counted: a watcher of many names reads this first
  auto other = srv.client(named("node1b", 5000));
  other->close_abruptly();
  REQUIRE(watcher->get(dropped("node1b"), 5s) == "connection lost");
  CHECK(watcher->add(kDroppedCountKey, 0) == 2);
}

TEST_CASE("liveness: a SIGKILLed client process is reported within a second") {
  LocalServer srv;
  auto watcher = srv.client();
  ddp::test::Background helper(
      {ddp::test::self_exe(), "--client-helper", std::to_string(srv.server.port()), "node2", "10000"});
  REQUIRE(watcher->get("helper/node2", 10s) == "up");
  // Let the helper read its SET's reply: a process killed with a reply unread resets its
  // connection (the kernel sends RST), which the server treats as a broken connection
  // that may come back (dropped after the heartbeat; reconnect_test.cpp), not as an exit.
  std::this_thread::sleep_for(300ms);
  Stopwatch sw;
  helper.signal(SIGKILL);
  CHECK(watcher->get(dropped("node2"), 5s) == "connection lost");
  CHECK(sw.seconds() < 1.0);
}

TEST_CASE("liveness: GOODBYE leaves no __dropped__ key") {
  LocalServer srv;
  auto watcher = srv.client();
  auto node = srv.client(named("node3", 300));
  node->close_gracefully();
  CHECK_FALSE(watcher->wait({dropped("node3")}, 800ms));
  CHECK(watcher->add(kDroppedCountKey, 0) == 0);
  CHECK_THROWS_AS(node->set("k", "v"), StoreUnavailable);
}

TEST_CASE("liveness: a silent client is dropped after its heartbeat timeout") {
  LocalServer srv;
  auto watcher = srv.client();
  auto node = srv.client(named("node4", 300));
  Stopwatch sw;
  CHECK(watcher->get(dropped("node4"), 5s) == "no heartbeat for 300 ms");
  CHECK(sw.seconds() == Approx(0.3).margin(0.25));
  CHECK_THROWS_AS(node->ping(), StoreUnavailable);  // the server closed it
}

TEST_CASE("liveness: ping() and the pings inside a long wait keep a client alive") {
  LocalServer srv;
  auto watcher = srv.client();
  auto node = srv.client(named("node5", 300));
  for (int i = 0; i < 8; ++i) {
    std::this_thread::sleep_for(100ms);
    node->ping();
  }
  CHECK_FALSE(node->wait({"never"}, 1200ms));  // 4 heartbeat periods inside one request
  CHECK_FALSE(watcher->try_get(dropped("node5")));
  node->set("still", "here");
}

TEST_CASE("liveness: anonymous or heartbeat-less clients leave no key") {
  LocalServer srv;
  auto watcher = srv.client();
  srv.client(named("", 300))->close_abruptly();
  srv.client(named("quiet", 0))->close_abruptly();
  std::this_thread::sleep_for(600ms);
  CHECK_FALSE(watcher->try_get(dropped("quiet")));
  CHECK_FALSE(watcher->try_get(dropped("")));
}

TEST_CASE("liveness: a waiter on a __dropped__ key wakes when the peer dies mid-wait") {
  LocalServer srv;
  auto watcher = srv.client();
  auto node = srv.client(named("node6", 5000));
  std::thread killer([&] {
    std::this_thread::sleep_for(100ms);
    node->close_abruptly();
  });
  Stopwatch sw;
  CHECK(watcher->wait({dropped("node6")}, 5s));
  CHECK(sw.seconds() < 1.0);
  killer.join();
}
