// MemoryStore: the Store interface in one process, for unit tests of rendezvous logic.
// Thread-safe (one mutex; a condition variable wakes blocking get/wait/multi_get when
// keys arrive), so several simulated agents can share one from different threads.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>

#include "launcher/store/store.hpp"

namespace ddp::launch::store {

class MemoryStore : public Store {
 public:
  MemoryStore() = default;
  MemoryStore(const MemoryStore&) = delete;
  MemoryStore& operator=(const MemoryStore&) = delete;

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, Duration timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool wait(const std::vector<std::string>& keys, Duration timeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool remove(const std::string& key) override;
  std::vector<std::string> multi_get(const std::vector<std::string>& keys, Duration timeout) override;
  void multi_set(const std::vector<std::pair<std::string, std::string>>& items) override;
  std::optional<std::string> try_get(const std::string& key) override;

  size_t size() const;

 private:
  bool all_present(const std::vector<std::string>& keys) const;  // mutex held
  bool wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys, Duration timeout);

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> data_;
};

}  // namespace ddp::launch::store
