// c10d_libtorch_client: LibTorch's own c10d::TCPStore client (isServer=false) drives every
// request type of its dialect against a store at HOST PORT: set/get, add, compareSet,
// check, wait (ready, then a timeout), getNumKeys, deleteKey; then torch 1.13's watchKey, or
// torch 2.x's append, multiGet/multiSet, the queues, listKeys, barrier and clone. Prints one
// line per check (the same lines against any correct store: check_store.py compares them with
// torch's own server's); exits 1 at the first mismatch. Usage: c10d_libtorch_client HOST PORT
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <vector>

#include <unistd.h>

#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>

namespace {
using Bytes = std::vector<uint8_t>;
Bytes bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }
std::string text(const Bytes& b) { return std::string(b.begin(), b.end()); }

void expect(bool ok, const std::string& what) {
  std::cout << (ok ? "ok: " : "FAILED: ") << what << std::endl;
  if (!ok) std::exit(1);
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: c10d_libtorch_client HOST PORT\n";
    return 2;
  }
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(std::stoi(argv[2]));
  opts.isServer = false;
  opts.waitWorkers = false;
  opts.timeout = std::chrono::seconds(20);
  auto store = c10::make_intrusive<c10d::TCPStore>(argv[1], opts);
  const std::string tag = "libtorch/" + std::to_string(::getpid()) + "/";

  store->set(tag + "a", bytes("hello"));
  expect(text(store->get(tag + "a")) == "hello", "set then get returns the value");
  expect(store->add(tag + "n", 5) == 5 && store->add(tag + "n", -2) == 3, "add counts from 0 and returns the sum");
  expect(text(store->get(tag + "n")) == "3", "a counter reads as its decimal text");
  expect(text(store->compareSet(tag + "a", bytes("wrong"), bytes("x"))) == "hello",
         "compareSet with a wrong expectation returns the current value");
  expect(text(store->compareSet(tag + "a", bytes("hello"), bytes("x"))) == "x", "compareSet that matches swaps");
  expect(text(store->compareSet(tag + "fresh", Bytes{}, bytes("y"))) == "y",
         "compareSet of a missing key expected missing creates it");
  expect(store->check({tag + "a", tag + "n"}), "check: all keys present");
  expect(!store->check({tag + "a", tag + "missing"}), "check: one key missing");
  store->wait({tag + "a"});
  expect(true, "wait on a present key returns");
  bool timed_out = false;
  try {
    store->wait({tag + "never"}, std::chrono::milliseconds(300));
  } catch (const std::exception&) {
    timed_out = true;
  }
  expect(timed_out, "wait on a missing key times out");
  expect(text(store->get(tag + "a")) == "x", "the connection still works after a wait timed out");
  const int64_t before = store->getNumKeys();
  store->set(tag + "counted", bytes("1"));
  expect(store->getNumKeys() == before + 1, "getNumKeys counts a new key");
  expect(store->deleteKey(tag + "counted") && !store->deleteKey(tag + "counted"),
         "deleteKey removes once, then finds nothing");
  expect(store->getNumKeys() == before, "getNumKeys after the delete");

#if TORCH_VERSION_MAJOR >= 2
  store->append(tag + "log", bytes("ab"));
  store->append(tag + "log", bytes("cd"));
  expect(text(store->get(tag + "log")) == "abcd", "append creates, then appends");
  store->multiSet({tag + "m1", tag + "m2"}, {bytes("one"), bytes("two")});
  const auto both = store->multiGet({tag + "m2", tag + "m1"});
  expect(both.size() == 2 && text(both[0]) == "two" && text(both[1]) == "one", "multiSet then multiGet, in order");
  store->queuePush(tag + "q", bytes("first"));
  store->queuePush(tag + "q", bytes("second"));
  expect(store->queueLen(tag + "q") == 2, "queueLen counts two pushes");
  expect(text(store->queuePop(tag + "q", false)) == "first" && text(store->queuePop(tag + "q", true)) == "second",
         "queuePop returns them in order");
  expect(store->queueLen(tag + "q") == 0, "queueLen after both pops");
  const auto keys = store->listKeys();
  const auto listed = [&](const std::string& key) { return std::find(keys.begin(), keys.end(), key) != keys.end(); };
  expect(listed(tag + "a") && listed(tag + "m1") && !listed(tag + "q"), "listKeys has the keys, not the queue");
  store->barrier(tag + "barrier", 1, std::chrono::seconds(10));
  expect(true, "barrier of one returns");
  bool barrier_timed_out = false;
  try {
    store->barrier(tag + "pair", 2, std::chrono::milliseconds(300));
  } catch (const std::exception&) {
    barrier_timed_out = true;
  }
  expect(barrier_timed_out, "barrier of two with one arrival times out");
  auto twin = store->clone();
  expect(text(twin->get(tag + "a")) == "x", "a clone (its own connection) reads the same store");
  std::cout << "all requests of the torch 2.x client served" << std::endl;
#else
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> events;
  store->watchKey(tag + "w", [&](c10::optional<std::string> old_value, c10::optional<std::string> new_value) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back(old_value.value_or("<none>") + "->" + new_value.value_or("<none>"));
    cv.notify_all();
  });
  store->set(tag + "w", bytes("1"));
  store->set(tag + "w", bytes("2"));
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(20), [&] { return events.size() >= 2; });
  }
  const auto ends_with = [](const std::string& s, const std::string& end) {
    return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
  };
  expect(events.size() == 2 && ends_with(events[0], "->1") && events[1] == "1->2",
         "watchKey's callback hears the create and the update");
  std::cout << "all requests of the torch 1.13 client served" << std::endl;
#endif
  return 0;
}
