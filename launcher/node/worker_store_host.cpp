#include "launcher/node/worker_store_host.hpp"

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/node/worker_store.hpp"
#include "launcher/os/ports.hpp"

namespace ddp::launch::node {

void WorkerStoreHost::host_attempt(const JobConfig& job, worker::GroupPlan& plan, bool fixed_port) {
  server_.reset();
  const std::string host = os::store_listen_host(plan.master_addr);
  for (int tries = 1;; ++tries) {
    try {
      server_ = listen_worker_store(host, plan.master_port, job.restrict_worker_store_peers,
                                    static_cast<size_t>(plan.world_size));
      server_->serve();
      return;
    } catch (const LaunchError& e) {
      if (fixed_port || e.exit_code() != exit_code::kAddressInUse || tries == 3) throw;
      plan.master_port = os::pick_free_port();
    }
  }
}

int WorkerStoreHost::listen_early(const std::string& host, bool restrict_peers, size_t ranks) {
  server_.reset();
  server_ = listen_worker_store(host, 0, restrict_peers, ranks);
  return server_->port();
}

void WorkerStoreHost::serve(const std::vector<std::string>& allowed_hosts) {
  if (server_) server_->serve(allowed_hosts);
}

}  // namespace ddp::launch::node
