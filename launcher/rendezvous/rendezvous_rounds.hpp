// The multi-node agent: one launcher per node. The job's store is the agent store, hosted by
// the leader (node 0 in static mode, the launcher that can bind --rdzv-endpoint in c10d
// mode), or an etcd cluster that nobody hosts (each round elects its leader). Every launcher
// joins rounds through it, runs its workers, heartbeats, and checks the round. A worker
// failure, a lost node or a new node waiting ends the round on every node at once; then
// all restart together (--max-restarts counts for the job) or all exit with the same root
// cause. The agent is a RoundSource (node/round_source.hpp) for the one agent loop
// (node/agent_loop.hpp) on its NodeSession. Returns the exit code. Blocks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"
#include "launcher/cli/rendezvous_conf.hpp"    // RendezvousConf
#include "launcher/cli/rendezvous_target.hpp"  // RdzvBackend, HttpEndpoint
#include "launcher/cli/strike_policy.hpp"
#include "launcher/node/job_config.hpp"
#include "launcher/supervise/stop_input.hpp"

namespace ddp::launch::rendezvous {

// How this node finds the others, from the command line.
struct MultiNodeSpec {
  cli::RdzvBackend rdzv_backend = cli::RdzvBackend::kStatic;  // static: node 0 hosts the store at master_addr:port
  std::vector<HttpEndpoint> rdzv_endpoints;                   // otherwise: the store's host[:port] (port 0: default)
  cli::RendezvousConf rdzv;
  std::string master_addr = "127.0.0.1";
  std::optional<int> master_port;
  int node_rank = 0;
  bool node_rank_given = false;  // explicit --node-rank: honoured in dynamic mode too
  std::string local_addr;        // where this node's workers' store would listen
  int nnodes_min = 1;
  int nnodes_max = 1;
  cli::StrikePolicy strikes;  // --strikes: the leader leaves out a node that keeps failing
};

// stop_input: the launching machine's session (a many-host agent's stdin; fd -1: none).
int run_multi_node_agent(const node::JobConfig& job, const MultiNodeSpec& spec, const cli::Environment& env,
                         const supervise::StopInputSpec& stop_input = {});

}  // namespace ddp::launch::rendezvous
