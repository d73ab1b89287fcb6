// --dry-run: prints each worker's command and contract variables for one group plan,
// marking the values the workers would inherit unchanged. Starts nothing, writes no file.
#pragma once

#include "launcher/cli/environment.hpp"
#include "launcher/node/job_config.hpp"
#include "launcher/worker/worker_env.hpp"

namespace ddp::launch::node {

// Writes to stdout; returns the exit code (0).
int print_dry_run(const JobConfig& job, const worker::GroupPlan& plan, const cli::Environment& base);

}  // namespace ddp::launch::node
