#include "launcher/store/memory_store.hpp"

#include <fmt/format.h>

#include "launcher/store/value.hpp"

namespace ddp::launch::store {

bool MemoryStore::all_present(const std::vector<std::string>& keys) const {
  for (const auto& k : keys)
    if (!data_.count(k)) return false;
  return true;
}

bool MemoryStore::wait_locked(std::unique_lock<std::mutex>& lock, const std::vector<std::string>& keys,
                              Duration timeout) {
  return changed_.wait_for(lock, timeout, [&] { return all_present(keys); });
}

void MemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    data_[key] = value;
  }
  changed_.notify_all();
}

std::string MemoryStore::get(const std::string& key, Duration timeout) { return multi_get({key}, timeout).front(); }

int64_t MemoryStore::add(const std::string& key, int64_t delta) {
  int64_t result = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = data_.find(key);
    result = add_to_value(key, it == data_.end() ? "" : it->second, delta);
    data_[key] = std::to_string(result);
  }
  changed_.notify_all();
  return result;
}

std::string MemoryStore::compare_set(const std::string& key, const std::string& expected, const std::string& desired) {
  std::string now;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = data_.find(key);
    const std::string current = it == data_.end() ? "" : it->second;
    if (current != expected) return current;
    data_[key] = desired;
    now = desired;
  }
  changed_.notify_all();
  return now;
}

bool MemoryStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return wait_locked(lock, keys, timeout);
}

bool MemoryStore::check(const std::vector<std::string>& keys) {
  std::lock_guard<std::mutex> lock(mutex_);
  return all_present(keys);
}

bool MemoryStore::remove(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  return data_.erase(key) > 0;
}

std::vector<std::string> MemoryStore::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!wait_locked(lock, keys, timeout)) {
    std::vector<std::string> missing;
    for (const auto& k : keys)
      if (!data_.count(k)) missing.push_back(k);
    throw StoreTimeout(fmt::format("timed out after {} ms waiting for {} in the in-memory store", timeout.count(),
                                   describe_missing(missing, keys.size())));
  }
  std::vector<std::string> values;
  values.reserve(keys.size());
  for (const auto& k : keys) values.push_back(data_.at(k));
  return values;
}

void MemoryStore::multi_set(const std::vector<std::pair<std::string, std::string>>& items) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [k, v] : items) data_[k] = v;
  }
  changed_.notify_all();
}

std::optional<std::string> MemoryStore::try_get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = data_.find(key);
  if (it == data_.end()) return std::nullopt;
  return it->second;
}

size_t MemoryStore::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return data_.size();
}

}  // namespace ddp::launch::store
