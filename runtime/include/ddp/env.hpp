// WorkerEnv: the launcher's worker contract (torchrun's variable names, README "The worker environment") read
// and validated once. Without a launcher it is rank 0 of 1. Plain value type; from_env() reads
// the process environment (not thread-safe against concurrent setenv).
#pragma once

#include <map>
#include <string>

#include "ddp/errors.hpp"

namespace ddp {

struct WorkerEnv {
  int rank = 0;                           // RANK
  int world_size = 1;                     // WORLD_SIZE
  int local_rank = 0;                     // LOCAL_RANK
  int local_world_size = 1;               // LOCAL_WORLD_SIZE
  int group_rank = 0;                     // GROUP_RANK (node rank)
  int group_world_size = 1;               // GROUP_WORLD_SIZE (nodes)
  std::string role_name = "default";      // ROLE_NAME
  int role_rank = 0;                      // ROLE_RANK
  int role_world_size = 1;                // ROLE_WORLD_SIZE
  std::string master_addr = "127.0.0.1";  // MASTER_ADDR
  int master_port = 0;                    // MASTER_PORT; 0 = not set
  int restart_count = 0;                  // TORCHELASTIC_RESTART_COUNT
  int max_restarts = 0;                   // TORCHELASTIC_MAX_RESTARTS
  std::string run_id;                     // TORCHELASTIC_RUN_ID
  std::string error_file;                 // TORCHELASTIC_ERROR_FILE ("" = none)
  bool use_agent_store = false;           // TORCHELASTIC_USE_AGENT_STORE=True: the launcher hosts the store
  bool from_launcher = false;             // true when RANK or WORLD_SIZE was set

  // Reads the process environment. Throws ConfigError on non-numeric or inconsistent values
  // (RANK >= WORLD_SIZE, LOCAL_RANK >= LOCAL_WORLD_SIZE, missing MASTER_PORT when
  // WORLD_SIZE > 1, ...), naming the variable and what to set instead.
  static WorkerEnv from_env();
  // Same rules on an explicit variable map (unit tests, spawn).
  static WorkerEnv from_map(const std::map<std::string, std::string>& vars);
  // The variables a launcher sets for this worker (inverse of from_map).
  std::map<std::string, std::string> to_map() const;
};

}  // namespace ddp
