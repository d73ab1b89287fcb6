// KeyTable: the server's keys and its parked waiters, without sockets. A waiter is a set
// of keys plus a callback run once all of them exist; each new key only visits the
// waiters that still miss it, so K agents waiting for K keys cost O(K^2), not O(K^3).
// Every lookup is hashed: a request naming n keys costs O(n), duplicates included.
// Single-threaded (the server's loop thread); callbacks run inside set() and must not
// call back into the table (the server posts them to its loop).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ddp::launch::store {

class KeyTable {
 public:
  using WaiterId = uint64_t;
  using Ready = std::function<void()>;

  void set(const std::string& key, const std::string& value);
  const std::string* find(const std::string& key) const;  // nullptr if missing
  int64_t add(const std::string& key, int64_t delta);     // throws StoreError if not an integer
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired);
  bool erase(const std::string& key);
  // One lookup per key: true with a pointer to each value (in order, valid until the next
  // change) when every key exists; false as soon as one is missing.
  bool find_all(const std::vector<std::string>& keys, std::vector<const std::string*>& values) const;
  // The keys that do not exist, each once, in the order first named.
  std::vector<std::string> missing(const std::vector<std::string>& keys) const;
  std::vector<std::string> values(const std::vector<std::string>& keys) const;  // all must exist
  // Total size of the values of keys (all must exist), duplicates counted each time.
  uint64_t value_bytes(const std::vector<std::string>& keys) const;

  // Runs ready (once) when every key exists; call only while some are missing.
  WaiterId park(const std::vector<std::string>& keys, Ready ready);
  void unpark(WaiterId id);  // forget a waiter (timed out, disconnected); no-op if gone

  size_t size() const { return data_.size(); }
  // Changes with every write or delete: a reply computed at one generation is still
  // right while it holds.
  uint64_t generation() const { return generation_; }
  size_t waiter_count() const { return waiters_.size(); }

 private:
  struct Waiter {
    std::vector<std::string> keys;        // everything asked for
    std::vector<std::string> registered;  // the missing keys registered in by_key_
    size_t remaining = 0;                 // of those, not yet arrived
    Ready ready;
  };
  void on_new_key(const std::string& key);
  void register_missing(WaiterId id, Waiter& waiter);
  void unregister(WaiterId id, const Waiter& waiter);

  std::unordered_map<std::string, std::string> data_;
  std::unordered_map<WaiterId, Waiter> waiters_;
  std::unordered_map<std::string, std::unordered_set<WaiterId>> by_key_;  // missing key -> waiters
  WaiterId next_id_ = 1;
  uint64_t generation_ = 0;
};

}  // namespace ddp::launch::store
