// Store: the key-value interface the launchers rendezvous through (a control plane, not a
// data path). Implementations here: MemoryStore (in-process, for tests), PrefixStore
// (namespaces keys per job), TcpStoreClient (talks to a StoreServer); elsewhere EtcdStore
// (rendezvous/etcd_store.hpp: the job's keys in etcd). Every blocking call
// takes a timeout and throws StoreTimeout naming the keys it waited for; a lost
// connection throws StoreUnavailable. Implementations are not thread-safe unless noted.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace ddp::launch::store {

using Duration = std::chrono::milliseconds;

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// The keys were not all set within the timeout.
class StoreTimeout : public StoreError {
 public:
  using StoreError::StoreError;
};
// The server cannot be reached, closed the connection, or rejected us (bad token, version).
class StoreUnavailable : public StoreError {
 public:
  using StoreError::StoreError;
};

class Store {
 public:
  virtual ~Store() = default;

  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits until key exists, then returns its value.
  virtual std::string get(const std::string& key, Duration timeout) = 0;
  // Adds delta to the integer stored at key (missing = 0) and returns the new value.
  virtual int64_t add(const std::string& key, int64_t delta) = 0;
  // If key's value equals expected (missing counts as ""), sets desired. Returns the value
  // now stored (desired on success, the current value otherwise; "" if still missing).
  virtual std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired) = 0;
  // Waits until every key exists; false on timeout (no throw).
  virtual bool wait(const std::vector<std::string>& keys, Duration timeout) = 0;
  // True if every key exists now.
  virtual bool check(const std::vector<std::string>& keys) = 0;
  // Deletes key; true if it existed.
  virtual bool remove(const std::string& key) = 0;
  // Waits until every key exists, returns the values in order.
  virtual std::vector<std::string> multi_get(const std::vector<std::string>& keys, Duration timeout) = 0;
  virtual void multi_set(const std::vector<std::pair<std::string, std::string>>& items) = 0;
  // The value if key exists now, without waiting.
  virtual std::optional<std::string> try_get(const std::string& key) = 0;
};

// "key 'a'" / "keys 'a', 'b' (2 of 5 missing)": how a StoreTimeout names what it waited
// for (the first few keys); every implementation's timeout message uses it.
std::string describe_missing(const std::vector<std::string>& missing, size_t asked);

}  // namespace ddp::launch::store
