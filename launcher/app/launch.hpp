// The agent: resolves the validated options once (resolve_job.hpp), then hands the job to
// --dry-run's printout, the multi-node agent (more than one node, or elastic) or the
// single-node agent. A many-host launch's agent passes its placement (resolve_job.hpp).
// Returns the launcher's exit code (exit_status.hpp). Blocks.
#pragma once

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/app/resolve_job.hpp"  // Placement
#include "launcher/supervise/stop_input.hpp"

namespace ddp::launch {

// placement: a many-host agent's, from the launching machine. stop_input: the
// launching machine's session (a many-host agent's stdin), read on the node's loop.
int run_agent(const cli::LaunchOptions& options, const cli::Environment& env, const Placement& placement = std::nullopt,
              const supervise::StopInputSpec& stop_input = {});

}  // namespace ddp::launch
