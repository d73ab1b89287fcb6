// WorkerStoreHost: the one owner of a node's workers' store (worker_store.hpp) for a job, held
// by NodeSession: listening before an attempt's workers start, serving while they run, closed
// once they are gone. One node alone hosts it for each attempt at the group's MASTER_PORT
// (host_attempt); a node of a multi-node job listens before each join on a port of its own
// (listen_early: the round's plan names it if this node becomes group rank 0), then serves it
// (group rank 0) or closes it. Single-threaded (the server runs on its own thread).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "launcher/c10d/server.hpp"
#include "launcher/node/job_config.hpp"

namespace ddp::launch::node {

class WorkerStoreHost {
 public:
  // Listens at plan.master_port and serves. A port that was picked (fixed_port false: no
  // --master-port) and is taken by now is replaced by another free one in plan. Throws
  // LaunchError as listen_worker_store does.
  void host_attempt(const JobConfig& job, worker::GroupPlan& plan, bool fixed_port);
  // Listens on host:0 for a job of up to `ranks` workers, not serving yet; returns the port.
  int listen_early(const std::string& host, bool restrict_peers, size_t ranks);
  // Serves what listen_early opened; only clients from `allowed_hosts` where the job restricts
  // its peers.
  void serve(const std::vector<std::string>& allowed_hosts);
  // The attempt's workers are gone (or this node is not group rank 0): the store goes.
  void close() { server_.reset(); }
  bool open() const { return server_ != nullptr; }

 private:
  std::unique_ptr<c10d::Server> server_;
};

}  // namespace ddp::launch::node
