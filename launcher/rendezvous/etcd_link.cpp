

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/rendezvous/abort_wait_thread.hpp"
#include "launcher/rendezvous/etcd_errors.hpp"
#include "launcher/rendezvous/etcd_link.hpp"
#include "launcher/rendezvous/etcd_store.hpp"
#include "launcher/os/process.hpp"
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <unistd.h>

namespace ddp::launch::rendezvous {
namespace {

constexpr int64_t kMinLeaseTtlS = 2;      // etcd grants no shorter lease
constexpr int64_t kMinJobLeaseTtlS = 10;  // the job's keys outlive every launcher by this
constexpr double kConnectTimeoutS = 1.0;  // one connection attempt to one member

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

std::string read_password(const cli::RendezvousConf& conf) {
  if (conf.password_file.empty()) return conf.password;
  std::ifstream in(conf.password_file);
  std::string line;
  if (!in || !std::getline(in, line))
    throw LaunchError(exit_code::kUsage, fmt::format("--rdzv-conf password_file={}: cannot read the etcd password "
                                                     "from it (its first line)",
                                                     conf.password_file));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

etcd::EtcdOptions etcd_options(const MultiNodeSpec& spec) {
  const cli::RendezvousConf& conf = spec.rdzv;
  etcd::EtcdOptions o;
  bool https = conf.https;
  o.endpoints = etcd::endpoints_of(spec.rdzv_endpoints, kDefaultEtcdPort, &https);  // read by cli/
  o.tls = https;
  o.cacert = conf.cacert;
  o.cert = conf.cert;
  o.key = conf.key;
  if (!o.tls && !(o.cacert.empty() && o.cert.empty()))
    throw LaunchError(exit_code::kUsage, "--rdzv-conf cacert=/cert=/key= need protocol=https (or https:// endpoints)");
  o.username = conf.username;
  o.password = read_password(conf);
  if (!o.username.empty() && o.password.empty())
    throw LaunchError(exit_code::kUsage, fmt::format("--rdzv-conf username={} needs a password: set "
                                                     "DDP_LAUNCH_ETCD_PASSWORD or --rdzv-conf password_file=PATH",
                                                     o.username));
  o.request_timeout = ms(conf.heartbeat_timeout_s);
  o.connect_timeout = ms(std::min(kConnectTimeoutS, conf.heartbeat_timeout_s));
  return o;
}

// The abort wait thread's waiter: a watch on the round's abort key over a client of its own.
// Throws store::StoreUnavailable (etcd_errors.hpp), from the constructor too.
class EtcdKeyWaiter : public KeyWaiter {
 public:
  EtcdKeyWaiter(const etcd::EtcdOptions& options, std::string prefix)
      : address_("etcd at " + etcd::endpoints_text(options.endpoints)),
        client_(with_store_errors(address_, [&] { return std::make_unique<etcd::EtcdClient>(options); })),
        prefix_(std::move(prefix)) {}
  bool wait_for(const std::string& key, store::Duration slice) override {
    const auto deadline = etcd::Clock::now() + slice;
    return with_store_errors(address_, [&] {
      for (;;) {
        etcd::RangeResult r = client_->range(prefix_ + key);
        if (!r.kvs.empty()) return true;
        if (etcd::Clock::now() >= deadline) return false;
        client_->watch_change(prefix_ + key, r.revision + 1, deadline);
        if (client_->interrupted()) throw store::StoreUnavailable("the abort wait thread was stopped");
      }
    });
  }
  void interrupt() override { client_->interrupt(); }

 private:
  std::string address_;
  std::unique_ptr<etcd::EtcdClient> client_;
  std::string prefix_;
};

}  // namespace

JobStoreLink connect_etcd(const MultiNodeSpec& spec, const std::string& run_id, const StopRequested& stop_requested) {
  const cli::RendezvousConf& conf = spec.rdzv;
  const etcd::EtcdOptions options = etcd_options(spec);
  JobStoreLink link;
  link.leaderless = true;
  link.name = fmt::format("{}:{}", os::host_name(), ::getpid());
  link.endpoint = HostPort{options.endpoints.front().host, options.endpoints.front().port};
  const auto ttl = std::max<int64_t>(kMinLeaseTtlS, static_cast<int64_t>(std::ceil(conf.heartbeat_timeout_s)));
  auto store = std::make_unique<EtcdStore>(options, "/ddp-launch/" + run_id + "/", link.name, ttl,
                                           std::max<int64_t>(kMinJobLeaseTtlS, 2 * ttl));
  store->open(etcd::Clock::now() + ms(conf.join_timeout_s), stop_requested);
  link.address = store->address();
  link.root = store.get();
  link.close = [s = store.get()] { s->close(); };
  link.open_waiter = [options, prefix = "/ddp-launch/" + run_id + "/"] {
    return std::unique_ptr<KeyWaiter>(std::make_unique<EtcdKeyWaiter>(options, prefix));
  };
  link.job = std::move(store);  // the job's keys and the unprefixed store at once
  console::launcher_notice(fmt::format("joined {}{} (etcd rendezvous, run id {}, lease TTL {} s)", link.address,
                                       options.tls ? " over TLS" : "", run_id, ttl));
  return link;
}

}  // namespace ddp::launch::rendezvous
