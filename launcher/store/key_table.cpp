#include "launcher/store/key_table.hpp"

#include <string_view>

#include "launcher/store/value.hpp"

namespace ddp::launch::store {

void KeyTable::set(const std::string& key, const std::string& value) {
  ++generation_;
  const bool is_new = data_.insert_or_assign(key, value).second;
  if (is_new) on_new_key(key);
}

const std::string* KeyTable::find(const std::string& key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : &it->second;
}

int64_t KeyTable::add(const std::string& key, int64_t delta) {
  const std::string* current = find(key);
  const int64_t result = add_to_value(key, current ? *current : "", delta);
  set(key, std::to_string(result));
  return result;
}

std::string KeyTable::compare_set(const std::string& key, const std::string& expected, const std::string& desired) {
  const std::string* current = find(key);
  const std::string now = current ? *current : "";
  if (now != expected) return now;
  set(key, desired);
  return desired;
}

bool KeyTable::erase(const std::string& key) {
  ++generation_;
  return data_.erase(key) > 0;
}

bool KeyTable::find_all(const std::vector<std::string>& keys, std::vector<const std::string*>& values) const {
  values.clear();
  values.reserve(keys.size());
  for (const auto& k : keys) {
    auto it = data_.find(k);
    if (it == data_.end()) return false;
    values.push_back(&it->second);
  }
  return true;
}

std::vector<std::string> KeyTable::missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  std::unordered_set<std::string_view> seen;  // views into keys, which outlive it
  for (const auto& k : keys)
    if (!data_.count(k) && seen.insert(k).second) out.push_back(k);
  return out;
}

uint64_t KeyTable::value_bytes(const std::vector<std::string>& keys) const {
  uint64_t total = 0;
  for (const auto& k : keys) total += data_.at(k).size();
  return total;
}

std::vector<std::string> KeyTable::values(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const auto& k : keys) out.push_back(data_.at(k));
  return out;
}

KeyTable::WaiterId KeyTable::park(const std::vector<std::string>& keys, Ready ready) {
  const WaiterId id = next_id_++;
  Waiter& w = waiters_[id];
  w.keys = keys;
  w.ready = std::move(ready);
  register_missing(id, w);
  return id;
}

void KeyTable::register_missing(WaiterId id, Waiter& waiter) {
  waiter.registered = missing(waiter.keys);
  waiter.remaining = waiter.registered.size();
  for (const auto& k : waiter.registered) by_key_[k].insert(id);
}

// Removes id from the keys it still waits on (those that arrived are already gone).
void KeyTable::unregister(WaiterId id, const Waiter& waiter) {
  for (const auto& k : waiter.registered) {
    auto it = by_key_.find(k);
    if (it == by_key_.end()) continue;
    it->second.erase(id);
    if (it->second.empty()) by_key_.erase(it);
  }
}

void KeyTable::unpark(WaiterId id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  unregister(id, it->second);
  waiters_.erase(it);
}

void KeyTable::on_new_key(const std::string& key) {
  auto found = by_key_.find(key);
  if (found == by_key_.end()) return;
  const std::unordered_set<WaiterId> ids = std::move(found->second);
  by_key_.erase(found);
  std::vector<WaiterId> complete;
  for (WaiterId id : ids)
    if (--waiters_.at(id).remaining == 0) complete.push_back(id);
  std::vector<Ready> ready;
  for (WaiterId id : complete) {
    Waiter& w = waiters_.at(id);
    if (!missing(w.keys).empty()) {  // a key it counted was deleted meanwhile: wait again
      register_missing(id, w);
      continue;
    }
    ready.push_back(std::move(w.ready));
    waiters_.erase(id);
  }
  for (auto& r : ready) r();
}

}  // namespace ddp::launch::store
