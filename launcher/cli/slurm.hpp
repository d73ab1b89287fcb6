// Slurm defaults: under srun, a launcher with no --nnodes/--node-rank/--master-addr takes
// the step's node count, its SLURM_NODEID and the first host of the step's node list
// (SLURM_STEP_* first, else the job's: SLURM_NNODES, SLURM_JOB_NODELIST). Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::cli {

// "node[01-03,07],gpu5" -> node01 node02 node03 node07 gpu5. Throws LaunchError(kUsage)
// on a malformed list.
std::vector<std::string> expand_nodelist(const std::string& nodelist);

struct SlurmJob {
  int nnodes = 1;
  int node_rank = 0;
  std::string first_host;
};

// The job step this process runs in, if a node count (SLURM_STEP_NUM_NODES or
// SLURM_NNODES), SLURM_NODEID and a node list (SLURM_STEP_NODELIST, SLURM_JOB_NODELIST or
// SLURM_NODELIST) are all set.
std::optional<SlurmJob> slurm_job(const Environment& env);

}  // namespace ddp::launch::cli
