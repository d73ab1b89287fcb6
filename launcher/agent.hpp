// The agent: resolves the validated options once (resolve_job.hpp), then hands the job to
// --dry-run's printout, the multi-node agent (more than one node, or elastic) or the
// single-node agent. A many-host launch's agent passes its placement (resolve_job.hpp).
// Returns the launcher's exit code (exit_status.hpp). Blocks.
#pragma once

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/resolve_job.hpp"  // Placement
#include "launcher/supervise/stop_requests.hpp"

namespace ddp::launch {

// placement: a many-host agent's, from the launching machine. stops (may be null): stop
// requests from another thread (a many-host agent's stdin watch).
int run_agent(const cli::LaunchOptions& options, const cli::Environment& env, const Placement& placement = std::nullopt,
              supervise::StopRequests* stops = nullptr);

}  // namespace ddp::launch
