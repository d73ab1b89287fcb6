#include "launcher/rendezvous/etcd_store.hpp"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "launcher/rendezvous/etcd_errors.hpp"
#include "launcher/store/protocol.hpp"

namespace ddp::launch::rendezvous {
namespace {

using etcd::Clock;
using etcd::Compare;
using etcd::PutOp;
using etcd::TxnRequest;

constexpr std::chrono::milliseconds kOpenRetry{200};    // etcd unreachable at start: try again
constexpr std::chrono::milliseconds kKeeperFloor{500};  // keepalive at most this often
constexpr int kJobLeaseAttempts = 5;                    // racing launchers agree within two

int64_t integer_value(const std::string& key, const std::string& text) {
  size_t used = 0;
  int64_t n = 0;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {  // reported below
    used = 0;
  }
  if (used == 0 || used != text.size())
    throw store::StoreError(fmt::format("etcd key '{}' holds '{}', not an integer", key, text));
  return n;
}

// The job's lease key holds the lease's id, in decimal (an int64: up to 19 digits).
std::optional<int64_t> lease_id(const std::string& text) {
  int64_t id = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), id);
  if (ec != std::errc() || end != text.data() + text.size() || id <= 0) return std::nullopt;
  return id;
}

}  // namespace

EtcdStore::EtcdStore(const etcd::EtcdOptions& options, std::string prefix, std::string name, int64_t ttl_s,
                     int64_t job_ttl_s)
    : options_(options),
      address_("etcd at " + etcd::endpoints_text(options.endpoints)),
      prefix_(std::move(prefix)),
      name_(std::move(name)),
      ttl_s_(ttl_s),
      job_ttl_s_(job_ttl_s) {
  client_ = with_store_errors(address_, [&] { return std::make_unique<etcd::EtcdClient>(options_); });
}

EtcdStore::~EtcdStore() { close(); }

template <class F>
auto EtcdStore::guarded(F f) -> decltype(f()) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!lost_.empty()) throw store::StoreUnavailable(lost_);
  }
  return with_store_errors(address_, f);
}

void EtcdStore::open(Clock::time_point deadline, const std::function<bool()>& stop_requested) {
  for (;;) {
    try {
      lease_ = client_->lease_grant(ttl_s_);
      client_->put({prefix_ + "alive/" + name_, "1", lease_});
      join_job_lease();
      break;
    } catch (const etcd::EtcdUnavailable& e) {
      if (Clock::now() >= deadline)
        throw store::StoreUnavailable(
            fmt::format("cannot reach {} within the join timeout: {}; is etcd running "
                        "there, and is --rdzv-endpoint right (etcd serving TLS needs --rdzv-conf "
                        "protocol=https)?",
                        address(), e.what()));
      if (stop_requested && stop_requested()) throw store::StoreUnavailable(fmt::format("{}: {}", address(), e.what()));
      std::this_thread::sleep_for(kOpenRetry);
    } catch (const etcd::EtcdError& e) {
      throw as_store_error(e, address_);
    }
  }
  etcd::EtcdOptions keeper_options = options_;
  keeper_options.request_timeout = std::max<std::chrono::milliseconds>(kKeeperFloor, std::chrono::seconds(ttl_s_) / 3);
  keeper_client_ = with_store_errors(address_, [&] { return std::make_unique<etcd::EtcdClient>(keeper_options); });
  keeper_ = std::thread([this] { keep_alive(); });
}

// Every launcher keeps the job's lease alive; the first one creates it (a transaction:
// only if the key is not there), the others find it. Racing launchers settle within a few
// attempts, without pauses: a creator that lost the race reads the winner's key next, and
// a key naming a lease etcd reports gone is already deleted (etcd answers a keepalive of an
// expired lease only once it has revoked it, keys included). So the attempts run out only
// while something else keeps rewriting the key, and a key that is not attached to the
// lease it names never goes away: both are errors at once, not an etcd to wait for.
void EtcdStore::join_job_lease() {
  const std::string key = prefix_ + "job_lease";
  for (int attempt = 0; attempt < kJobLeaseAttempts; ++attempt) {
    if (auto kv = read(key)) {
      const std::optional<int64_t> id = lease_id(kv->value);
      if (!id) throw store::StoreError(foreign_job_lease(*kv, fmt::format("holds '{}', not a lease id", kv->value)));
      if (client_->lease_keepalive(*id) > 0) {
        job_lease_ = *id;
        return;
      }
      if (kv->lease != *id)
        throw store::StoreError(
            foreign_job_lease(*kv, fmt::format("names lease {}, which etcd does not know, and is attached to {}", *id,
                                               kv->lease == 0 ? std::string("no lease: etcd never deletes it")
                                                              : fmt::format("lease {} instead", kv->lease))));
      continue;  // expired right now: its key went with it
    }
    const int64_t id = client_->lease_grant(job_ttl_s_);
    TxnRequest t;
    t.compare.push_back(Compare{Compare::Target::kCreateRevision, key, 0, ""});
    t.success.push_back(PutOp{key, std::to_string(id), id});
    if (client_->txn(t).succeeded) {
      job_lease_ = id;
      return;
    }
    client_->lease_revoke(id);
  }
  throw store::StoreError(fmt::format(
      "{}: the job's key {} changed {} times while this launcher joined the job's lease (it named a lease that had "
      "just expired, or another launcher created it first, each time): is another program writing under {}? Try "
      "again, or pick another --rdzv-id",
      address_, key, kJobLeaseAttempts, prefix_));
}

// The job's lease key as ddp-launch never writes it: what is wrong, and what to do.
std::string EtcdStore::foreign_job_lease(const etcd::KeyValue& kv, const std::string& what) const {
  return fmt::format(
      "{}: the job's key {} {}; ddp-launch did not write it so (by hand, or another program using "
      "{}?). If no job with this --rdzv-id is running, delete the job's keys (etcdctl del --prefix "
      "{}), or pick another --rdzv-id",
      address_, kv.key, what, prefix_, prefix_);
}

void EtcdStore::keep_alive() {
  etcd::EtcdClient& client = *keeper_client_;
  const auto period = std::max<std::chrono::milliseconds>(kKeeperFloor, std::chrono::seconds(ttl_s_) / 3);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (wake_.wait_for(lock, period, [this] { return stopping_; })) break;
    lock.unlock();
    std::string lost;
    try {
      if (client.lease_keepalive(lease_) == 0)
        lost = fmt::format(
            "this launcher's lease at {} expired (no keepalive reached etcd for {} s): the other "
            "nodes count it as lost",
            address(), ttl_s_);
      client.lease_keepalive(job_lease_);
    } catch (const std::exception&) {  // etcd unreachable for now: keep trying until the lease expires
    }
    lock.lock();
    if (!lost.empty() && lost_.empty()) lost_ = lost;
  }
}

void EtcdStore::close() noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  wake_.notify_all();
  if (keeper_.joinable()) keeper_.join();
  if (lease_ == 0) return;
  try {
    client_->lease_revoke(lease_);
    const std::string alive = prefix_ + "alive/";
    if (job_lease_ != 0 && client_->range(alive, etcd::prefix_range_end(alive), true).count == 0)
      client_->lease_revoke(job_lease_);  // the last one out: the job's keys go
  } catch (const std::exception&) {       // best effort: the leases expire on their own
  }
}

std::optional<etcd::KeyValue> EtcdStore::read(const std::string& full_key) {
  etcd::RangeResult r = client_->range(full_key);
  if (r.kvs.empty()) return std::nullopt;
  return r.kvs.front();
}

bool EtcdStore::wait_one(const std::string& full_key, Clock::time_point deadline) {
  for (;;) {
    etcd::RangeResult r = client_->range(full_key);
    if (!r.kvs.empty()) return true;
    if (Clock::now() >= deadline) return false;
    client_->watch_change(full_key, r.revision + 1, deadline);
  }
}

void EtcdStore::set(const std::string& key, const std::string& value) {
  guarded([&] { client_->put({prefix_ + key, value, job_lease_}); });
}

std::string EtcdStore::get(const std::string& key, store::Duration timeout) {
  return guarded([&] {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      if (auto kv = read(prefix_ + key)) return kv->value;
      if (!wait_one(prefix_ + key, deadline))
        throw store::StoreTimeout(fmt::format("timed out after {} ms waiting for {} in {}", timeout.count(),
                                              store::describe_missing({key}, 1), address()));
    }
  });
}

int64_t EtcdStore::add(const std::string& key, int64_t delta) {
  return guarded([&] {
    const std::string full = prefix_ + key;
    for (;;) {
      std::optional<etcd::KeyValue> kv = read(full);
      const int64_t now = kv ? integer_value(key, kv->value) : 0;
      if (delta == 0) return now;
      TxnRequest t;
      t.compare.push_back(kv ? Compare{Compare::Target::kModRevision, full, kv->mod_revision, ""}
                             : Compare{Compare::Target::kCreateRevision, full, 0, ""});
      t.success.push_back(PutOp{full, std::to_string(now + delta), job_lease_});
      if (client_->txn(t).succeeded) return now + delta;
    }
  });
}

std::string EtcdStore::compare_set(const std::string& key, const std::string& expected, const std::string& desired) {
  return guarded([&] {
    const std::string full = prefix_ + key;
    TxnRequest t;
    t.compare.push_back(expected.empty() ? Compare{Compare::Target::kCreateRevision, full, 0, ""}
                                         : Compare{Compare::Target::kValue, full, 0, expected});
    t.success.push_back(PutOp{full, desired, job_lease_});
    t.failure_range = full;
    etcd::TxnResult r = client_->txn(t);
    if (r.succeeded) return desired;
    return r.failure_kvs.empty() ? std::string() : r.failure_kvs.front().value;
  });
}

bool EtcdStore::wait(const std::vector<std::string>& keys, store::Duration timeout) {
  return guarded([&] {
    const auto deadline = Clock::now() + timeout;
    for (const auto& key : keys)
      if (!wait_one(prefix_ + key, deadline)) return false;
    return true;
  });
}

bool EtcdStore::check(const std::vector<std::string>& keys) {
  return guarded([&] {
    for (const auto& key : keys)
      if (!read(prefix_ + key)) return false;
    return true;
  });
}

bool EtcdStore::remove(const std::string& key) {
  return guarded([&] { return client_->delete_range(prefix_ + key) > 0; });
}

std::vector<std::string> EtcdStore::multi_get(const std::vector<std::string>& keys, store::Duration timeout) {
  const auto deadline = Clock::now() + timeout;
  std::vector<std::string> values;
  for (const auto& key : keys) {
    const auto left = std::chrono::duration_cast<store::Duration>(deadline - Clock::now());
    values.push_back(get(key, std::max(left, store::Duration(0))));
  }
  return values;
}

namespace {
// etcd takes at most 128 operations in a transaction (its --max-txn-ops default): a larger
// set (a round's seats) goes in several, each atomic.
constexpr size_t kMaxTxnOps = 128;
}  // namespace

void EtcdStore::multi_set(const std::vector<std::pair<std::string, std::string>>& items) {
  guarded([&] {
    for (size_t first = 0; first < items.size(); first += kMaxTxnOps) {
      TxnRequest t;  // no comparison: every put
      for (size_t i = first; i < std::min(items.size(), first + kMaxTxnOps); ++i)
        t.success.push_back(PutOp{prefix_ + items[i].first, items[i].second, job_lease_});
      client_->txn(t);
    }
  });
}

std::optional<std::string> EtcdStore::try_get(const std::string& key) {
  return guarded([&]() -> std::optional<std::string> {
    const std::string dropped = store::kDroppedPrefix;
    if (key.rfind(dropped, 0) == 0) {  // the round check asks: is this launcher's lease gone?
      if (read(prefix_ + "alive/" + key.substr(dropped.size()))) return std::nullopt;
      return fmt::format("its etcd lease expired: no keepalive for {} s", ttl_s_);
    }
    if (auto kv = read(prefix_ + key)) return kv->value;
    return std::nullopt;
  });
}

}  // namespace ddp::launch::rendezvous
