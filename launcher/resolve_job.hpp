// The one place where the command line becomes what each layer needs: the job (devices
// planned, worker command checked, log layout, output routing, supervision), where this
// node sits without a rendezvous, and how it finds the others with one. Reads the CUDA
// driver only when GPUs matter; checks PROGRAM can run. Throws LaunchError.
#pragma once

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/multinode/multinode_agent.hpp"
#include "launcher/supervise/job_config.hpp"
#include "launcher/supervise/single_node_agent.hpp"

namespace ddp::launch {

struct ResolvedJob {
  JobConfig job;
  SingleNodeSpec single_node;  // also --dry-run's view
  MultiNodeSpec multi_node;
  bool multi_node_job = false;  // is_multi_node(options)
  bool dry_run = false;
};

ResolvedJob resolve_job(const LaunchOptions& options, const Environment& env);

// The pure translations, exposed for tests.
DeviceSpec device_spec(const LaunchOptions& options);
WorkerCommandSpec worker_command_spec(const LaunchOptions& options);
SupervisorConfig supervisor_config(const LaunchOptions& options);

}  // namespace ddp::launch
