// The multi-node agent: one launcher per node. The leader (node 0 in static mode, the
// launcher that hosts --rdzv-endpoint in c10d mode) runs the agent store; every launcher
// joins rounds through it, runs its workers, heartbeats, and watches the others. A worker
// failure, a lost node or a new node waiting ends the round on every node at once; then
// all restart together (--max-restarts counts for the job) or all exit with the same root
// cause. Returns the exit code. Blocks.
#pragma once

#include <string>

#include "launcher/supervise/worker_launches.hpp"

namespace ddp::launch {

int run_multi_node_agent(const LaunchOptions& options, const Environment& env, const JobSetup& job,
                         const std::string& run_id);

}  // namespace ddp::launch
