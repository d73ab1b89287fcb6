// The job's keys in etcd, as a store::Store: every key lives under /ddp-launch/<run id>/
// and is attached to the job's lease (kept alive by every launcher of the job; once none
// is left the keys expire with it). Each launcher also holds a lease of its own (TTL =
// heartbeat_timeout) with its liveness key alive/<name>: try_get("__dropped__/<name>")
// answers from that key, so the round check finds a dead launcher as it finds one the agent
// store dropped. compare_set and add are transactions, get and wait use watches. A
// background thread keeps both leases alive; everything else blocks on the caller's thread
// (not thread-safe). Errors: store::StoreUnavailable (no member answers, credentials or TLS
// refused, this launcher's lease expired; etcd's errors translated by etcd_errors.hpp),
// store::StoreTimeout.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "launcher/etcd/etcd_client.hpp"
#include "launcher/store/store.hpp"

namespace ddp::launch::rendezvous {

class EtcdStore : public store::Store {
 public:
  // ttl_s: this launcher's lease (heartbeat_timeout); job_ttl_s: the job's lease.
  EtcdStore(const etcd::EtcdOptions& options, std::string prefix, std::string name, int64_t ttl_s, int64_t job_ttl_s);
  ~EtcdStore() override;

  // Takes this launcher's lease and the job's, writes the liveness key and starts keeping
  // both alive. Retries an unreachable etcd until `deadline` or stop_requested() (asked
  // between tries), then throws StoreUnavailable;
  // a job's lease key it cannot join (not written by ddp-launch) is a StoreError at once.
  void open(etcd::Clock::time_point deadline, const std::function<bool()>& stop_requested = {});
  // Revokes this launcher's lease; the last launcher of the job revokes the job's too
  // (every key goes). Best effort, never throws.
  void close() noexcept;
  const std::string& address() const { return address_; }  // "etcd at h1:p1, h2:p2"

  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key, store::Duration timeout) override;
  int64_t add(const std::string& key, int64_t delta) override;
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool wait(const std::vector<std::string>& keys, store::Duration timeout) override;
  bool check(const std::vector<std::string>& keys) override;
  bool remove(const std::string& key) override;
  std::vector<std::string> multi_get(const std::vector<std::string>& keys, store::Duration timeout) override;
  void multi_set(const std::vector<std::pair<std::string, std::string>>& items) override;
  std::optional<std::string> try_get(const std::string& key) override;

 private:
  template <class F>
  auto guarded(F f) -> decltype(f());
  std::optional<etcd::KeyValue> read(const std::string& full_key);
  bool wait_one(const std::string& full_key, etcd::Clock::time_point deadline);
  void join_job_lease();
  std::string foreign_job_lease(const etcd::KeyValue& kv, const std::string& what) const;
  void keep_alive();  // the keeper thread

  etcd::EtcdOptions options_;
  std::string address_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::string prefix_;  // "/ddp-launch/<run id>/"
  std::string name_;
  int64_t ttl_s_;
  int64_t job_ttl_s_;
  std::unique_ptr<etcd::EtcdClient> keeper_client_;  // the keeper thread's own connection
  int64_t lease_ = 0;
  int64_t job_lease_ = 0;
  std::string lost_;  // set by the keeper (under mutex_): our lease expired
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread keeper_;
};

}  // namespace ddp::launch::rendezvous
