#include "launcher/c10d/key_space.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

namespace ddp::launch::c10d {
namespace {
void erase_id(std::vector<ConnId>& v, ConnId id) { v.erase(std::remove(v.begin(), v.end(), id), v.end()); }

// A reply to the requester `to`, in order with the other bytes the request sends.
void reply(ConnId to, std::vector<Outgoing>& out, std::string bytes) { out.push_back({to, std::move(bytes)}); }

// c10d parses a counter with std::stoll: leading blanks, a sign, digits, anything after.
std::optional<int64_t> parse_counter(const std::string& s) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (end == s.c_str() || errno == ERANGE) return std::nullopt;
  return static_cast<int64_t>(v);
}
}  // namespace

const std::string* KeySpace::find(const std::string& key) const {
  auto it = data_.find(key);
  return it == data_.end() ? nullptr : &it->second;
}

bool KeySpace::present(const std::string& key) const {
  if (data_.count(key)) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

void KeySpace::notify(uint8_t type, const std::string& key, const std::string& old_value, const std::string& new_value,
                      std::vector<Outgoing>& out) {
  auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  for (ConnId id : it->second) out.push_back({id, encode_watch_event(type, key, old_value, new_value)});
}

void KeySpace::store(const std::string& key, std::string value, std::vector<Outgoing>& out, bool wake_waiters) {
  auto it = data_.find(key);
  if (it == data_.end()) {
    auto& slot = data_[key];
    slot = std::move(value);
    notify(kKeyCreated, key, "", slot, out);
  } else {
    std::string old = std::move(it->second);
    it->second = std::move(value);
    notify(kKeyUpdated, key, old, it->second, out);
  }
  if (wake_waiters) wake(key, out, false);
}

void KeySpace::park(ConnId id, const std::string& key) {
  waiting_[key].push_back(id);
  waits_[id] = Parked{1, {key}};
}

void KeySpace::wake(const std::string& key, std::vector<Outgoing>& out, bool just_one) {
  auto it = waiting_.find(key);
  if (it == waiting_.end()) return;
  auto& ids = it->second;
  size_t taken = 0;
  for (; taken < ids.size(); ++taken) {
    const ConnId id = ids[taken];
    auto w = waits_.find(id);
    if (w != waits_.end() && --w->second.missing == 0) {
      waits_.erase(w);
      out.push_back({id, encode_u8(kStopWaiting)});
    }
    if (just_one) break;
  }
  if (!just_one || taken + 1 >= ids.size()) {
    waiting_.erase(it);
  } else {
    ids.erase(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(taken + 1));
  }
}

// Only the keys `id` waits on are looked at: the work is that connection's, not the store's.
void KeySpace::cancel_wait(ConnId id) {
  auto w = waits_.find(id);
  if (w == waits_.end()) return;
  for (const auto& key : w->second.keys) {
    auto it = waiting_.find(key);
    if (it == waiting_.end()) continue;
    erase_id(it->second, id);
    if (it->second.empty()) waiting_.erase(it);
  }
  waits_.erase(w);
}

void KeySpace::disconnect(ConnId id) {
  cancel_wait(id);
  for (auto it = watchers_.begin(); it != watchers_.end();) {
    erase_id(it->second, id);
    it = it->second.empty() ? watchers_.erase(it) : std::next(it);
  }
}

std::optional<std::string> KeySpace::apply(ConnId from, const Request& r, std::vector<Outgoing>& out) {
  if (r.op != Op::kCancelWait) cancel_wait(from);
  switch (r.op) {
    case Op::kValidate: break;
    case Op::kPing: reply(from, out, encode_u32(r.nonce)); break;
    case Op::kSet: store(r.keys[0], r.values[0], out); break;
    case Op::kQueuePush: queue_push(r, out); break;
    case Op::kMultiSet: multi_set(r, out); break;
    case Op::kAppend: append(r, out); break;
    case Op::kCompareSet: compare_set(from, r, out); break;
    case Op::kGet: get(from, r, out); break;
    case Op::kMultiGet: multi_get(from, r, out); break;
    case Op::kAdd: return add(from, r, out);
    case Op::kCheck: check(from, r, out); break;
    case Op::kWait: wait(from, r, out); break;
    case Op::kCancelWait: cancel_wait_request(from, out); break;
    case Op::kBarrier: return barrier(from, r, out);
    case Op::kListKeys: list_keys(from, out); break;
    case Op::kNumKeys: reply(from, out, encode_i64(static_cast<int64_t>(data_.size()))); break;
    case Op::kDeleteKey: delete_key(from, r, out); break;
    case Op::kWatchKey: watch_key(from, r, out); break;
    case Op::kQueuePop: queue_pop(from, r, out); break;
    case Op::kQueueLen: queue_len(from, r, out); break;
  }
  return std::nullopt;
}

void KeySpace::queue_push(const Request& r, std::vector<Outgoing>& out) {
  queues_[r.keys[0]].push_back(r.values[0]);
  wake(r.keys[0], out, true);
}

void KeySpace::multi_set(const Request& r, std::vector<Outgoing>& out) {
  for (size_t i = 0; i < r.keys.size(); ++i) store(r.keys[i], r.values[i], out);
}

void KeySpace::append(const Request& r, std::vector<Outgoing>& out) {
  const std::string* old = find(r.keys[0]);
  store(r.keys[0], old ? *old + r.values[0] : r.values[0], out);
}

void KeySpace::compare_set(ConnId from, const Request& r, std::vector<Outgoing>& out) {
  const std::string& key = r.keys[0];
  const std::string& expected = r.values[0];
  const std::string& desired = r.values[1];
  const std::string* now = find(key);
  if (!now) {
    // As c10d: a missing key is created only when the caller expected it missing (an
    // empty value); otherwise the reply is the caller's own expectation.
    if (!expected.empty()) return reply(from, out, encode_bytes(expected));
    store(key, desired, out);
  } else if (*now == expected) {
    store(key, desired, out);
  }
  reply(from, out, encode_bytes(*find(key)));
}

void KeySpace::get(ConnId from, const Request& r, std::vector<Outgoing>& out) const {
  const std::string* v = find(r.keys[0]);
  reply(from, out, encode_bytes(v ? *v : std::string()));
}

void KeySpace::multi_get(ConnId from, const Request& r, std::vector<Outgoing>& out) const {
  std::string all;
  for (const auto& k : r.keys) {
    const std::string* v = find(k);
    all += encode_bytes(v ? *v : std::string());
  }
  reply(from, out, std::move(all));
}

std::optional<std::string> KeySpace::add(ConnId from, const Request& r, std::vector<Outgoing>& out) {
  int64_t value = r.delta;
  if (const std::string* old = find(r.keys[0])) {
    const auto n = parse_counter(*old);
    if (!n) return fmt::format("ADD on key '{}', whose value ({} bytes) is not an integer", r.keys[0], old->size());
    value = static_cast<int64_t>(static_cast<uint64_t>(*n) + static_cast<uint64_t>(r.delta));
  }
  // The reply first, as c10d: a waiter woken by this key is told after the adder.
  reply(from, out, encode_i64(value));
  store(r.keys[0], std::to_string(value), out);
  return std::nullopt;
}

void KeySpace::check(ConnId from, const Request& r, std::vector<Outgoing>& out) const {
  const bool all = std::all_of(r.keys.begin(), r.keys.end(), [&](const std::string& k) { return present(k); });
  reply(from, out, encode_u8(all ? kCheckReady : kCheckNotReady));
}

// `from` is parked on nothing yet (apply cancelled its earlier wait), so each missing key named
// once is one more to wait for; the cost is this request's keys, not the other waiters.
void KeySpace::wait(ConnId from, const Request& r, std::vector<Outgoing>& out) {
  Parked parked;
  std::unordered_set<std::string_view> named;  // a key named twice counts once
  for (const auto& k : r.keys) {
    if (present(k) || !named.insert(k).second) continue;
    waiting_[k].push_back(from);
    parked.keys.push_back(k);
  }
  if (parked.keys.empty()) return reply(from, out, encode_u8(kStopWaiting));
  parked.missing = parked.keys.size();
  waits_[from] = std::move(parked);
}

void KeySpace::cancel_wait_request(ConnId from, std::vector<Outgoing>& out) {
  cancel_wait(from);
  reply(from, out, encode_u8(kWaitCanceled));
}

// As c10d: the key's value is a decimal counter; each arrival adds one. Below the world
// size the caller is parked on the key like a WAIT (so CANCEL_WAIT, a SET of the key, or its
// disconnect ends it) and nobody is woken; the arrival that reaches it is told at once and
// wakes every connection parked on the key. The counter stays.
std::optional<std::string> KeySpace::barrier(ConnId from, const Request& r, std::vector<Outgoing>& out) {
  const std::string& key = r.keys[0];
  int64_t count = 1;
  if (const std::string* old = find(key)) {
    const auto n = parse_counter(*old);
    if (!n) return fmt::format("BARRIER on key '{}', whose value ({} bytes) is not an integer", key, old->size());
    count = static_cast<int64_t>(static_cast<uint64_t>(*n) + 1);
  }
  const bool complete = count >= r.world_size;
  if (complete) reply(from, out, encode_u8(kStopWaiting));
  store(key, std::to_string(count), out, complete);
  if (!complete) park(from, key);
  return std::nullopt;
}

void KeySpace::list_keys(ConnId from, std::vector<Outgoing>& out) const {
  std::string bytes = encode_i64(static_cast<int64_t>(data_.size()));
  for (const auto& [key, value] : data_) bytes += encode_bytes(key);
  reply(from, out, std::move(bytes));
}

void KeySpace::delete_key(ConnId from, const Request& r, std::vector<Outgoing>& out) {
  auto it = data_.find(r.keys[0]);
  if (it == data_.end()) return reply(from, out, encode_i64(0));
  const std::string old = std::move(it->second);
  data_.erase(it);
  notify(kKeyDeleted, r.keys[0], old, "", out);
  reply(from, out, encode_i64(1));
}

void KeySpace::watch_key(ConnId from, const Request& r, std::vector<Outgoing>& out) {
  watchers_[r.keys[0]].push_back(from);
  reply(from, out, encode_u8(kKeyCallbackRegistered));
}

void KeySpace::queue_pop(ConnId from, const Request& r, std::vector<Outgoing>& out) {
  auto& q = queues_[r.keys[0]];
  std::string bytes = encode_i64(static_cast<int64_t>(q.size()));
  if (!q.empty()) {
    bytes += encode_bytes(q.front());
    q.pop_front();
  }
  if (q.empty()) queues_.erase(r.keys[0]);
  reply(from, out, std::move(bytes));
}

void KeySpace::queue_len(ConnId from, const Request& r, std::vector<Outgoing>& out) const {
  auto q = queues_.find(r.keys[0]);
  reply(from, out, encode_i64(q == queues_.end() ? 0 : static_cast<int64_t>(q->second.size())));
}

}  // namespace ddp::launch::c10d
