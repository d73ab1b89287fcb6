// The agent: turns validated options into a running job on this node. Multi-node jobs go
// to the multi-node agent; a single node plans devices and ranks, picks or checks the
// store port, prepares log files, then runs attempts on the Supervisor, restarting the
// whole group up to --max-restarts times, and ends with the failure report. Returns the
// launcher's exit code (exit_status.hpp). Blocks.
#pragma once

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"

namespace ddp::launch {

int run_agent(const LaunchOptions& options, const Environment& env);

}  // namespace ddp::launch
