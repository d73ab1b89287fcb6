

#include "launcher/base/exit_status.hpp"
#include "launcher/base/host_port.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/rendezvous/agent_store.hpp"
#include "launcher/rendezvous/agent_store_sizing.hpp"
#include "launcher/net/backoff.hpp"
#include "launcher/net/listen_error.hpp"
#include "launcher/net/open_files.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/os/process.hpp"
#include "launcher/store/prefix_store.hpp"
#include "launcher/store/tcp_client.hpp"
#include <chrono>
#include <fmt/format.h>
#include <thread>
#include <unistd.h>

namespace ddp::launch::rendezvous {
namespace {

constexpr int kDefaultRdzvPort = 29400;  // torchrun's c10d default

std::chrono::milliseconds ms(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
}

class StoreKeyWaiter : public KeyWaiter {
 public:
  StoreKeyWaiter(std::unique_ptr<store::TcpStoreClient> client, const std::string& prefix)
      : client_(std::move(client)), job_(prefix, *client_) {}
  ~StoreKeyWaiter() override { client_->close_gracefully(); }
  bool wait_for(const std::string& key, store::Duration slice) override { return job_.wait({key}, slice); }
  void interrupt() override { client_->interrupt(); }

 private:
  std::unique_ptr<store::TcpStoreClient> client_;
  store::PrefixStore job_;
};

// Tries to host the agent store on the address the job reaches it at; false when another
// launcher on this machine hosts it already (c10d mode: then we join it as a client).
bool host_store(const MultiNodeSpec& spec, const std::string& listen_host, const AgentStoreSizing& sizing,
                JobStoreLink& link) {
  store::ServerOptions options;
  options.host = listen_host;
  options.port = static_cast<uint16_t>(link.endpoint.port);
  options.token = spec.rdzv.token;
  options.max_connections = sizing.max_connections;
  options.backlog = sizing.backlog;
  link.server = std::make_unique<store::StoreServer>(options);
  try {
    link.server->start();
  } catch (const net::ListenError& e) {
    // Static node 0 and a forced host must host; otherwise another launcher on this
    // machine got there first, and we join it as a client.
    if (spec.rdzv_backend == cli::RdzvBackend::kStatic || spec.rdzv.is_host.value_or(false) || !e.address_in_use())
      throw LaunchError(e.address_in_use() ? exit_code::kAddressInUse : exit_code::kUsage, e.what());
    link.server.reset();
    return false;
  }
  for (const auto& w : sizing.warnings) console::launcher_notice("warning: " + w);
  if (options.token.empty() && !os::is_loopback_address(options.host))
    console::launcher_notice(
        fmt::format("warning: the agent store listens on {} without a token: anyone who can reach "
                    "it can read and write the job's rendezvous keys (and declare a node lost); "
                    "set the same --rdzv-conf token=<secret> (or DDP_LAUNCH_RDZV_TOKEN) on every node",
                    link.server->listen_address()));
  return true;
}

// Where the agent store is: --master-addr:--master-port (static), or the --rdzv-endpoint
// (c10d: one member, read by cli/; port 0: the default).
HostPort agent_store_endpoint(const MultiNodeSpec& spec) {
  if (spec.rdzv_backend == cli::RdzvBackend::kStatic) return HostPort{spec.master_addr, *spec.master_port};
  HostPort endpoint = spec.rdzv_endpoints.front().address;
  if (endpoint.port == 0) endpoint.port = kDefaultRdzvPort;
  return endpoint;
}

store::ClientOptions agent_client_options(const cli::RendezvousConf& conf, const std::string& name) {
  store::ClientOptions options;
  options.token = conf.token;
  options.name = name;
  options.request_timeout = ms(conf.heartbeat_timeout_s);
  options.heartbeat_timeout_ms = static_cast<uint32_t>(conf.heartbeat_timeout_s * 1000);
  options.reconnect_window = ms(conf.heartbeat_timeout_s);  // lost only after heartbeat_timeout
  return options;
}

// The port stayed taken on this machine, which a launcher that may host read as another
// launcher hosting, yet nothing answered there (why: the connection's error).
store::StoreError nobody_hosts(const HostPort& endpoint, const std::string& why) {
  return store::StoreError(fmt::format(
      "{} (port {} is in use on this machine, so this launcher did not host the store, yet nothing answered "
      "there: another program holds the port, or a connection's own end took it; `ss -tanp 'sport = :{}'` names "
      "it; choose another port)",
      why, endpoint.port, endpoint.port));
}

// The link's client side, once `client` is connected to `host`: the job's keys, the waiter's
// own connection (made later, by the abort wait), the notice.
void finish_link(JobStoreLink& link, std::unique_ptr<store::TcpStoreClient> client, const std::string& host,
                 store::ClientOptions options, const MultiNodeSpec& spec, const std::string& run_id) {
  options.give_up_connecting = nullptr;  // the waiter's connection: the store is up
  const std::string job_prefix = "ddp-launch/" + run_id;
  link.job = std::make_unique<store::PrefixStore>(job_prefix, *client);
  link.root = client.get();
  link.address = format_host_port(link.endpoint.host, link.endpoint.port);
  link.close = [c = client.get()] { c->close_gracefully(); };
  link.open_waiter = [host, port = static_cast<uint16_t>(link.endpoint.port), options, job_prefix] {
    store::ClientOptions nameless = options;
    nameless.name.clear();  // not a node: its loss is nobody's failure (its waits still ping)
    return std::unique_ptr<KeyWaiter>(
        std::make_unique<StoreKeyWaiter>(std::make_unique<store::TcpStoreClient>(host, port, nameless), job_prefix));
  };
  link.connection = std::move(client);
  console::launcher_notice(fmt::format("{} the agent store at {}{} ({} rendezvous, run id {})",
                                       link.leader ? "hosting" : "joined", link.address,
                                       link.leader ? ", listening on " + link.server->listen_address() : "",
                                       cli::rdzv_backend_name(spec.rdzv_backend), run_id));
}

}  // namespace

JobStoreLink connect_agent_store(const MultiNodeSpec& spec, const std::string& run_id,
                                 const StopRequested& stop_requested) {
  const cli::RendezvousConf& conf = spec.rdzv;
  JobStoreLink link;
  link.endpoint = agent_store_endpoint(spec);
  link.name = fmt::format("{}:{}", os::host_name(), ::getpid());
  const bool try_host = spec.rdzv_backend == cli::RdzvBackend::kStatic
                            ? spec.node_rank == 0
                            : conf.is_host.value_or(os::is_local_address(link.endpoint.host));
  const std::string listen_host = conf.bind_all ? "0.0.0.0" : os::store_listen_host(link.endpoint.host);
  store::ClientOptions options = agent_client_options(conf, link.name);
  // A launcher that found the port taken here while nobody listens there hosts the store
  // after all: two launchers that bind at the same moment may both find it taken (Linux
  // checks a listener's port only after marking it listening), and neither would host.
  bool stopped = false, rehost = false;
  options.give_up_connecting = [&](bool refused) {
    stopped = stop_requested && stop_requested();
    rehost = !stopped && refused && try_host && !link.leader;
    return stopped || rehost;
  };
  const auto deadline = std::chrono::steady_clock::now() + ms(conf.join_timeout_s);
  const AgentStoreSizing sizing =  // only a launcher that may host raises its open-file limit
      try_host ? size_agent_store(static_cast<size_t>(spec.nnodes_max), net::raise_open_file_limit(), net::somaxconn())
               : AgentStoreSizing{};
  const std::string where = format_host_port(link.endpoint.host, link.endpoint.port);
  // Two racers part ways at the first pause (20-30 ms); a port held for good is tried less often.
  for (net::Backoff backoff(std::chrono::milliseconds(20), std::chrono::milliseconds(250));;) {
    link.leader = try_host && host_store(spec, listen_host, sizing, link);
    // The leader's own client connects where its server listens.
    const std::string host = !link.leader ? link.endpoint.host : listen_host == "0.0.0.0" ? "127.0.0.1" : listen_host;
    options.connect_timeout = std::max(
        store::Duration(1), std::chrono::duration_cast<store::Duration>(deadline - std::chrono::steady_clock::now()));
    try {
      finish_link(link,
                  std::make_unique<store::TcpStoreClient>(host, static_cast<uint16_t>(link.endpoint.port), options),
                  host, options, spec, run_id);
      return link;
    } catch (const store::StoreError& e) {
      if (stopped) throw store::StoreUnavailable(fmt::format("{}: {}", where, e.what()));
      if (rehost && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(backoff.next());
        continue;
      }
      if (!try_host || link.leader) throw;
      throw nobody_hosts(link.endpoint, rehost
                                            ? fmt::format("cannot reach the rendezvous store at {} within {:g} s: {}",
                                                          where, conf.join_timeout_s, e.what())
                                            : e.what());
    }
  }
}

}  // namespace ddp::launch::rendezvous
