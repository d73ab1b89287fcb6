#include "launcher/store/key_table.hpp"

#include <algorithm>

#include "launcher/store/value.hpp"

namespace ddp::launch::store {

void KeyTable::set(const std::string& key, const std::string& value) {
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

std::string KeyTable::compare_set(const std::string& key, const std::string& expected,
                                  const std::string& desired) {
  const std::string* current = find(key);
  const std::string now = current ? *current : "";
  if (now != expected) return now;
  set(key, desired);
  return desired;
}

bool KeyTable::erase(const std::string& key) { return data_.erase(key) > 0; }

std::vector<std::string> KeyTable::missing(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  for (const auto& k : keys)
    if (!data_.count(k) && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  return out;
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
  const auto absent = missing(waiter.keys);
  waiter.remaining = absent.size();
  for (const auto& k : absent) by_key_.emplace(k, id);
}

void KeyTable::unpark(WaiterId id) {
  auto it = waiters_.find(id);
  if (it == waiters_.end()) return;
  for (const auto& k : it->second.keys) {
    auto [b, e] = by_key_.equal_range(k);
    for (auto j = b; j != e;) j = j->second == id ? by_key_.erase(j) : std::next(j);
  }
  waiters_.erase(it);
}

void KeyTable::on_new_key(const std::string& key) {
  auto [b, e] = by_key_.equal_range(key);
  std::vector<WaiterId> complete;
  for (auto j = b; j != e; ++j)
    if (--waiters_.at(j->second).remaining == 0) complete.push_back(j->second);
  by_key_.erase(b, e);
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
