// KeyTable, the server's data and parked waiters, without sockets.
#include <catch2/catch.hpp>

#include "launcher/store/key_table.hpp"
#include "launcher/store/store.hpp"

using namespace ddp::launch::store;

TEST_CASE("key table: a waiter runs once, when the last of its keys arrives") {
  KeyTable t;
  int fired = 0;
  t.set("a", "1");
  t.park({"a", "b", "c", "b"}, [&] { ++fired; });
  t.set("b", "2");
  t.set("b", "again");  // an overwrite is not a new key
  CHECK(fired == 0);
  t.set("c", "3");
  CHECK(fired == 1);
  CHECK(t.waiter_count() == 0);
  t.set("d", "4");
  CHECK(fired == 1);
}

TEST_CASE("key table: a key deleted after it was counted makes the waiter wait again") {
  KeyTable t;
  int fired = 0;
  t.park({"a", "b"}, [&] { ++fired; });
  t.set("a", "1");
  CHECK(t.erase("a"));
  t.set("b", "2");
  CHECK(fired == 0);
  CHECK(t.waiter_count() == 1);
  t.set("a", "again");
  CHECK(fired == 1);
}

TEST_CASE("key table: unpark forgets a waiter, values, add and compare_set") {
  KeyTable t;
  int fired = 0;
  auto id = t.park({"x"}, [&] { ++fired; });
  t.unpark(id);
  t.unpark(id);  // twice is harmless
  t.set("x", "1");
  CHECK(fired == 0);
  CHECK(t.add("x", 41) == 42);
  CHECK(t.values({"x"}) == std::vector<std::string>{"42"});
  CHECK(t.compare_set("x", "41", "no") == "42");
  CHECK(t.compare_set("x", "42", "yes") == "yes");
  CHECK_THROWS_AS(t.add("x", 1), StoreError);
  CHECK(t.missing({"x", "y", "y"}) == std::vector<std::string>{"y"});
}

TEST_CASE("key table: 256 waiters on 256 keys are all released") {
  KeyTable t;
  std::vector<std::string> keys;
  for (int i = 0; i < 256; ++i) keys.push_back("k" + std::to_string(i));
  int fired = 0;
  for (int i = 0; i < 256; ++i) t.park(keys, [&] { ++fired; });
  for (const auto& k : keys) t.set(k, "v");
  CHECK(fired == 256);
  CHECK(t.waiter_count() == 0);
}
