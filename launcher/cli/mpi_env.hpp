// mpirun and PMI defaults: a launcher started as one task per node by Open MPI's mpirun
// (OMPI_COMM_WORLD_RANK/SIZE), a PMI launcher such as MPICH's or Intel MPI's hydra
// (PMI_RANK/PMI_SIZE) or a PMIx one (PMIX_RANK with PMIX_SIZE) takes its node rank and
// node count from the task's rank and size, as under Slurm. Pure: the environment is passed in.
#pragma once

#include <optional>
#include <string>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::cli {

struct MpiTask {
  int rank = 0;                // this task's rank: the node rank
  int size = 1;                // tasks in the job: the node count
  int tasks_on_this_node = 1;  // OMPI_COMM_WORLD_LOCAL_SIZE or MPI_LOCALNRANKS; 1 when unknown
  std::string source;          // "Open MPI (OMPI_COMM_WORLD_RANK/SIZE)", ...
};

// The task this process is, if a rank and a size of one of the conventions above are set
// (Open MPI first, then PMIx, then PMI). Throws LaunchError(kUsage) when they are set but
// are not numbers with 0 <= rank < size.
std::optional<MpiTask> mpi_task(const Environment& env);

}  // namespace ddp::launch::cli
