// The single-node agent: picks or checks the workers' store port, then runs the one agent
// loop (agent_loop.hpp) over this node's own rounds (LocalRounds: attempt after attempt,
// the whole group restarted up to --max-restarts times), ending as JobEnd writes it (the
// failure report, the launcher's own error file when TORCHELASTIC_ERROR_FILE is set).
// Returns the launcher's exit code. Blocks.
#pragma once

#include <optional>
#include <string>

#include "launcher/cli/environment.hpp"
#include "launcher/node/job_config.hpp"
#include "launcher/supervise/stop_input.hpp"

namespace ddp::launch::node {

// Where this node sits when no rendezvous decides it (also --dry-run's view).
struct SingleNodeSpec {
  int node_rank = 0;  // --node-rank
  int nnodes = 1;     // --nnodes (MAX)
  std::string master_addr = "127.0.0.1";
  std::optional<int> master_port;  // fixed by --master-port; absent: a free port per attempt
};

// Ranks and the workers' store for attempt 0. Node 0 checks a fixed port is free
// (LaunchError(kAddressInUse) if not); without one, a free port is picked.
worker::GroupPlan single_node_group(const JobConfig& job, const SingleNodeSpec& node);

// stop_input: the launching machine's session (a many-host agent's stdin; fd -1: none).
int run_single_node_agent(const JobConfig& job, const SingleNodeSpec& node, const cli::Environment& env,
                          const supervise::StopInputSpec& stop_input = {});

}  // namespace ddp::launch::node
