// The one place where the command line becomes what each layer needs: the job (devices
// planned, worker command checked, log layout, output routing, supervision), where this
// node sits without a rendezvous, and how it finds the others with one. Reads the CUDA
// driver only when GPUs matter; checks PROGRAM can run. A many-host launch's agent passes its
// placement (Placement) as an input of its own: it takes the place of the flags'. Throws
// LaunchError.
#pragma once

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/many_hosts/plan/agent_plan.hpp"
#include "launcher/rendezvous/rendezvous_rounds.hpp"
#include "launcher/node/job_config.hpp"
#include "launcher/node/single_node_agent.hpp"

namespace ddp::launch {

struct ResolvedJob {
  node::JobConfig job;
  node::SingleNodeSpec single_node;  // also --dry-run's view
  rendezvous::MultiNodeSpec multi_node;
  bool multi_node_job = false;  // is_multi_node(options)
  bool dry_run = false;
};

// Where a many-host launch placed this node (its agent's configuration, many_hosts/plan/agent_plan);
// nullopt: the flags place it.
using Placement = std::optional<many_hosts::plan::AgentPlacement>;

ResolvedJob resolve_job(const cli::LaunchOptions& options, const cli::Environment& env,
                        const Placement& placement = std::nullopt);

// The options as a placed node runs them: the placement's node count (an elastic job's
// MIN:MAX, and its c10d rendezvous when the launcher picked it), node rank, workers and
// store address over the flags'; its host name as --local-addr when that is not given;
// stdin no worker's (it is the launching machine's channel). Pure.
cli::LaunchOptions placed_options(const cli::LaunchOptions& options, const many_hosts::plan::AgentPlacement& placement);

// The pure translations, exposed for tests.
worker::DeviceSpec device_spec(const cli::LaunchOptions& options);
worker::WorkerCommandSpec worker_command_spec(const cli::LaunchOptions& options);
supervise::SupervisorConfig supervisor_config(const cli::LaunchOptions& options);

}  // namespace ddp::launch
