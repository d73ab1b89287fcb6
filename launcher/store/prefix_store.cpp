#include "launcher/store/prefix_store.hpp"

namespace ddp::launch::store {

std::vector<std::string> PrefixStore::full_keys(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(full_key(k));
  return out;
}

void PrefixStore::set(const std::string& key, const std::string& value) { inner_.set(full_key(key), value); }

std::string PrefixStore::get(const std::string& key, Duration timeout) { return inner_.get(full_key(key), timeout); }

int64_t PrefixStore::add(const std::string& key, int64_t delta) { return inner_.add(full_key(key), delta); }

std::string PrefixStore::compare_set(const std::string& key, const std::string& expected, const std::string& desired) {
  return inner_.compare_set(full_key(key), expected, desired);
}

bool PrefixStore::wait(const std::vector<std::string>& keys, Duration timeout) {
  return inner_.wait(full_keys(keys), timeout);
}

bool PrefixStore::check(const std::vector<std::string>& keys) { return inner_.check(full_keys(keys)); }

bool PrefixStore::remove(const std::string& key) { return inner_.remove(full_key(key)); }

std::vector<std::string> PrefixStore::multi_get(const std::vector<std::string>& keys, Duration timeout) {
  return inner_.multi_get(full_keys(keys), timeout);
}

void PrefixStore::multi_set(const std::vector<std::pair<std::string, std::string>>& items) {
  std::vector<std::pair<std::string, std::string>> full;
  full.reserve(items.size());
  for (const auto& [k, v] : items) full.emplace_back(full_key(k), v);
  inner_.multi_set(full);
}

std::optional<std::string> PrefixStore::try_get(const std::string& key) { return inner_.try_get(full_key(key)); }

}  // namespace ddp::launch::store
