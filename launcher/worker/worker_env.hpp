// The worker environment contract (torchrun's names, see README): pure functions from the
// group plan and one worker's slot to its full environment. No I/O.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::worker {

// What every worker on this node shares for one attempt.
struct GroupPlan {
  int node_rank = 0;         // GROUP_RANK
  int nnodes = 1;            // GROUP_WORLD_SIZE
  int base_rank = 0;         // RANK of local rank 0 on this node
  int world_size = 1;        // WORLD_SIZE (all nodes)
  int local_world_size = 1;  // LOCAL_WORLD_SIZE
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string run_id = "none";
  std::string role = "default";
  int max_restarts = 0;
  int restart_count = 0;     // TORCHELASTIC_RESTART_COUNT of this attempt
  bool agent_store = false;  // TORCHELASTIC_USE_AGENT_STORE: a launcher serves MASTER_ADDR:MASTER_PORT
  int role_base_rank = 0;    // ROLE_RANK of local rank 0 (its role's workers on lower nodes)
  int role_world_size = 1;   // ROLE_WORLD_SIZE: workers with this node's role
  std::string signals_to_handle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";  // TORCHELASTIC_SIGNALS_TO_HANDLE
  std::string timer_file;  // TORCHELASTIC_TIMER_FILE: the file timers' pipe ("": not set here)
};

// What differs per worker.
struct WorkerSlot {
  int local_rank = 0;
  std::string error_file;                      // TORCHELASTIC_ERROR_FILE ("" disables)
  std::optional<std::string> visible_devices;  // CUDA_VISIBLE_DEVICES override
  bool local_rank_zero = false;                // --virtual-local-rank
  std::string python_hooks_dir;                // appended to PYTHONPATH ("": none; python_hooks.hpp)
};

inline int global_rank(const GroupPlan& plan, int local_rank) { return plan.base_rank + local_rank; }

// The launcher's environment plus the contract for this worker.
cli::Environment worker_environment(const cli::Environment& base, const GroupPlan& plan, const WorkerSlot& slot);

// The variables worker_environment sets (for --dry-run and the docs), in display order.
const std::vector<std::string>& contract_variables();

// ${local_rank} (torchrun's macro) replaced in one argument.
std::string substitute_local_rank(const std::string& arg, int local_rank);

}  // namespace ddp::launch::worker
