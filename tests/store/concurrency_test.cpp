// Many clients on one server thread: a 64-agent rendezvous round, contended ADDs and a
// compare-and-set election, with exact results.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "tests/store/fixture.hpp"

using namespace ddp::launch::store;
using namespace ddp::launch::store::test;

namespace {
template <typename Fn>
void in_threads(int n, Fn fn) {
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::vector<std::string> errors(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      try {
        fn(i);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(i)] = e.what();
        ++failures;
      }
    });
  for (auto& t : threads) t.join();
  for (const auto& e : errors)
    if (!e.empty()) FAIL_CHECK(e);
  REQUIRE(failures == 0);
}
}  // namespace

TEST_CASE("concurrency: 64 agents complete a rendezvous round with exact results") {
  constexpr int kAgents = 64;
  LocalServer srv;
  std::vector<int64_t> tickets(kAgents);
  std::vector<std::vector<std::string>> seen(kAgents);
  std::vector<std::string> keys;
  for (int i = 0; i < kAgents; ++i) keys.push_back("rank/" + std::to_string(i));
  in_threads(kAgents, [&](int i) {
    ClientOptions o;
    o.name = "agent" + std::to_string(i);
    o.heartbeat_timeout_ms = 10000;
    auto c = srv.client(o);
    tickets[static_cast<size_t>(i)] = c->add("round/count", 1);
    c->set(keys[static_cast<size_t>(i)], "host-" + std::to_string(i));
    REQUIRE(c->wait(keys, 20s));
    seen[static_cast<size_t>(i)] = c->multi_get(keys, 1s);
    c->close_gracefully();
  });
  std::vector<int64_t> sorted = tickets;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < kAgents; ++i) CHECK(sorted[static_cast<size_t>(i)] == i + 1);
  for (const auto& values : seen) {
    REQUIRE(values.size() == kAgents);
    for (int j = 0; j < kAgents; ++j) CHECK(values[static_cast<size_t>(j)] == "host-" + std::to_string(j));
  }
  auto c = srv.client();
  CHECK(c->get("round/count", 1s) == std::to_string(kAgents));
  CHECK_FALSE(c->try_get("__dropped__/agent0"));  // all said goodbye
}

TEST_CASE("concurrency: 32 clients x 100 contended ADDs and SETs lose nothing") {
  LocalServer srv;
  in_threads(32, [&](int i) {
    auto c = srv.client();
    for (int k = 0; k < 100; ++k) {
      c->add("counter", 1);
      c->set("last/" + std::to_string(i), std::to_string(k));
    }
  });
  auto c = srv.client();
  CHECK(c->get("counter", 1s) == "3200");
  for (int i = 0; i < 32; ++i) CHECK(c->get("last/" + std::to_string(i), 1s) == "99");
}

TEST_CASE("concurrency: compare_set elects exactly one leader among 32") {
  LocalServer srv;
  std::vector<std::string> winners(32);
  in_threads(32, [&](int i) {
    auto c = srv.client();
    winners[static_cast<size_t>(i)] = c->compare_set("leader", "", "node" + std::to_string(i));
  });
  std::set<std::string> distinct(winners.begin(), winners.end());
  CHECK(distinct.size() == 1);
  CHECK(srv.client()->get("leader", 1s) == *distinct.begin());
}

TEST_CASE("concurrency: 64 waiters parked on one key are all released by one SET") {
  LocalServer srv;
  std::atomic<int> released{0};
  std::thread setter([&] {
    auto c = srv.client();
    std::this_thread::sleep_for(300ms);
    c->set("go", "now");
  });
  in_threads(64, [&](int) {
    auto c = srv.client();
    if (c->get("go", 10s) == "now") ++released;
  });
  setter.join();
  CHECK(released == 64);
}
