// The one place where the command line becomes what each layer needs: the job (devices
// planned, worker command checked, log layout, output routing, supervision), where this
// node sits without a rendezvous, and how it finds the others with one. Reads the CUDA
// driver only when GPUs matter; checks PROGRAM can run. Throws LaunchError.
#pragma once

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/multinode/multinode_agent.hpp"
#include "launcher/node/job_config.hpp"
#include "launcher/node/single_node_agent.hpp"

namespace ddp::launch {

struct ResolvedJob {
  node::JobConfig job;
  node::SingleNodeSpec single_node;  // also --dry-run's view
  multinode::MultiNodeSpec multi_node;
  bool multi_node_job = false;  // is_multi_node(options)
  bool dry_run = false;
};

ResolvedJob resolve_job(const cli::LaunchOptions& options, const cli::Environment& env);

// The pure translations, exposed for tests.
worker::DeviceSpec device_spec(const cli::LaunchOptions& options);
worker::WorkerCommandSpec worker_command_spec(const cli::LaunchOptions& options);
supervise::SupervisorConfig supervisor_config(const cli::LaunchOptions& options);

}  // namespace ddp::launch
