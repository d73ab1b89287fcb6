// MemoryStore semantics (shared with the TCP store), PrefixStore namespacing, and how
// every store names missing keys (describe_missing).
#include <catch2/catch.hpp>

#include <thread>

#include "launcher/store/memory_store.hpp"
#include "launcher/store/prefix_store.hpp"
#include "launcher/store/store.hpp"
#include "tests/store/fixture.hpp"

using namespace ddp::launch::store;
using namespace std::chrono_literals;

TEST_CASE("memory store: set, get, add, compare_set, check, remove, try_get") {
  MemoryStore s;
  s.set("a", "1");
  CHECK(s.get("a", 10ms) == "1");
  CHECK(s.add("n", 5) == 5);
  CHECK(s.add("n", -2) == 3);
  CHECK(s.add("a", 1) == 2);
  s.set("text", "hello");
  CHECK_THROWS_WITH(s.add("text", 1), Catch::Contains("not an integer"));
  CHECK(s.compare_set("c", "", "first") == "first");   // missing counts as ""
  CHECK(s.compare_set("c", "wrong", "x") == "first");  // mismatch: current value returned
  CHECK(s.compare_set("c", "first", "second") == "second");
  CHECK(s.check({"a", "c"}));
  CHECK_FALSE(s.check({"a", "zzz"}));
  CHECK(s.remove("a"));
  CHECK_FALSE(s.remove("a"));
  CHECK_FALSE(s.try_get("a"));
  CHECK(s.try_get("c") == std::optional<std::string>("second"));
  s.multi_set({{"x", "1"}, {"y", "2"}});
  CHECK(s.multi_get({"y", "x"}, 10ms) == std::vector<std::string>{"2", "1"});
}

TEST_CASE("memory store: waits are woken by another thread, timeouts name the missing keys") {
  MemoryStore s;
  std::thread setter([&] {
    std::this_thread::sleep_for(50ms);
    s.multi_set({{"k1", "a"}, {"k2", "b"}});
  });
  CHECK(s.wait({"k1", "k2"}, 5s));
  setter.join();
  CHECK_FALSE(s.wait({"k1", "nope"}, 20ms));
  CHECK_THROWS_AS(s.get("nope", 20ms), StoreTimeout);
  CHECK_THROWS_WITH(s.multi_get({"k1", "m1", "m2"}, 20ms), Catch::Contains("'m1', 'm2' (2 of 3 missing)"));
}

TEST_CASE("prefix store: every key gets prefix/ and nothing leaks between prefixes") {
  MemoryStore inner;
  PrefixStore round1("job/1", inner), round2("job/2", inner);
  round1.set("k", "v1");
  round2.set("k", "v2");
  CHECK(inner.try_get("job/1/k") == std::optional<std::string>("v1"));
  CHECK(round1.get("k", 10ms) == "v1");
  CHECK(round2.get("k", 10ms) == "v2");
  CHECK(round1.add("n", 2) == 2);
  CHECK(inner.try_get("job/1/n") == std::optional<std::string>("2"));
  round1.multi_set({{"a", "1"}, {"b", "2"}});
  CHECK(round1.multi_get({"a", "b"}, 10ms) == std::vector<std::string>{"1", "2"});
  CHECK(round1.check({"a", "b"}));
  CHECK_FALSE(round2.check({"a"}));
  CHECK(round1.compare_set("c", "", "x") == "x");
  CHECK(round1.remove("c"));
  CHECK_FALSE(round2.try_get("a"));
  CHECK_FALSE(round2.wait({"a"}, 10ms));
  PrefixStore nested("attempt/0", round1);
  nested.set("z", "1");
  CHECK(inner.check({"job/1/attempt/0/z"}));
}

TEST_CASE("describe_missing names one key, several, and at most eight") {
  CHECK(describe_missing({"a"}, 1) == "key 'a'");
  CHECK(describe_missing({"a", "b"}, 5) == "keys 'a', 'b' (2 of 5 missing)");
  std::vector<std::string> many;
  for (int i = 0; i < 10; ++i) many.push_back("k" + std::to_string(i));
  CHECK(describe_missing(many, 10) == "keys 'k0', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7', ... (10 of 10 missing)");
}
