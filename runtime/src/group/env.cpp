// WorkerEnv parsing and validation (the launcher's env contract, torchrun names).
#include "ddp/env.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "runtime/src/process/standby_hook.hpp"

namespace ddp {
namespace {

using Vars = std::map<std::string, std::string>;

const char* const kNames[] = {
    // who the worker is
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_NAME", "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    // its store, its restarts and its error file
    "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_USE_AGENT_STORE"};

const std::string* find(const Vars& vars, const std::string& name) {
  auto it = vars.find(name);
  return it == vars.end() || it->second.empty() ? nullptr : &it->second;
}

int parse_int(const Vars& vars, const std::string& name, int fallback, int min_value) {
  const std::string* text = find(vars, name);
  if (!text) return fallback;
  errno = 0;
  char* end = nullptr;
  long value = std::strtol(text->c_str(), &end, 10);
  if (errno != 0 || end == text->c_str() || *end != '\0' || value < INT_MIN || value > INT_MAX) {
    throw ConfigError(name + "='" + *text + "' is not an integer; set it to a whole number (e.g. " + name + "=" +
                      std::to_string(min_value < 1 ? 0 : min_value) + ") or unset it");
  }
  if (value < min_value) {
    throw ConfigError(name + "=" + *text + " is out of range; it must be >= " + std::to_string(min_value));
  }
  return static_cast<int>(value);
}

void check_below(const std::string& name, int value, const std::string& limit_name, int limit) {
  if (value >= limit) {
    throw ConfigError(name + "=" + std::to_string(value) + " but " + limit_name + "=" + std::to_string(limit) + ": " +
                      name + " must be in [0, " + std::to_string(limit - 1) +
                      "]; check the launcher's settings (ranks count from 0)");
  }
}

}  // namespace

WorkerEnv WorkerEnv::from_map(const Vars& vars) {
  WorkerEnv env;
  env.from_launcher = find(vars, "RANK") || find(vars, "WORLD_SIZE");
  env.world_size = parse_int(vars, "WORLD_SIZE", 1, 1);
  env.rank = parse_int(vars, "RANK", 0, 0);
  if (find(vars, "WORLD_SIZE") == nullptr && find(vars, "RANK") != nullptr && env.rank != 0) {
    throw ConfigError("RANK=" + std::to_string(env.rank) +
                      " is set but WORLD_SIZE is not; set WORLD_SIZE to the total number of workers");
  }
  check_below("RANK", env.rank, "WORLD_SIZE", env.world_size);
  env.local_world_size = parse_int(vars, "LOCAL_WORLD_SIZE", env.from_launcher ? env.world_size : 1, 1);
  env.local_rank =
      parse_int(vars, "LOCAL_RANK", find(vars, "LOCAL_WORLD_SIZE") ? 0 : env.rank % env.local_world_size, 0);
  check_below("LOCAL_RANK", env.local_rank, "LOCAL_WORLD_SIZE", env.local_world_size);
  if (env.local_world_size > env.world_size) {
    throw ConfigError("LOCAL_WORLD_SIZE=" + std::to_string(env.local_world_size) + " exceeds WORLD_SIZE=" +
                      std::to_string(env.world_size) + "; a node cannot run more workers than the job has");
  }
  env.group_world_size = parse_int(vars, "GROUP_WORLD_SIZE", 1, 1);
  env.group_rank = parse_int(vars, "GROUP_RANK", 0, 0);
  check_below("GROUP_RANK", env.group_rank, "GROUP_WORLD_SIZE", env.group_world_size);
  if (const auto* role = find(vars, "ROLE_NAME")) env.role_name = *role;
  env.role_world_size = parse_int(vars, "ROLE_WORLD_SIZE", env.world_size, 1);
  env.role_rank = parse_int(vars, "ROLE_RANK", env.rank, 0);
  check_below("ROLE_RANK", env.role_rank, "ROLE_WORLD_SIZE", env.role_world_size);
  if (const auto* addr = find(vars, "MASTER_ADDR")) env.master_addr = *addr;
  env.master_port = parse_int(vars, "MASTER_PORT", 0, 0);
  if (env.master_port > 65535) {
    throw ConfigError("MASTER_PORT=" + std::to_string(env.master_port) + " is not a TCP port; use 1..65535");
  }
  if (env.world_size > 1 && find(vars, "MASTER_PORT") == nullptr) {
    throw ConfigError("WORLD_SIZE=" + std::to_string(env.world_size) +
                      " but MASTER_PORT is not set; set MASTER_ADDR and MASTER_PORT to rank 0's host and a "
                      "free port (ddp-launch and torchrun set them for you)");
  }
  env.restart_count = parse_int(vars, "TORCHELASTIC_RESTART_COUNT", 0, 0);
  env.max_restarts = parse_int(vars, "TORCHELASTIC_MAX_RESTARTS", 0, 0);
  if (const auto* id = find(vars, "TORCHELASTIC_RUN_ID")) env.run_id = *id;
  if (const auto* file = find(vars, "TORCHELASTIC_ERROR_FILE")) env.error_file = *file;
  // As torch.distributed reads it: exactly "True" means the launcher hosts the store.
  if (const auto* agent = find(vars, "TORCHELASTIC_USE_AGENT_STORE")) env.use_agent_store = *agent == "True";
  return env;
}

WorkerEnv WorkerEnv::from_env() {
  if (std::getenv(detail::kStandbyPendingEnvVar))
    throw ConfigError(
        "the worker's identity was read above ddp::standby_point() in a standby of a warm restart: the code above the "
        "point runs before the launcher says which worker this process becomes; move init_process_group, "
        "worker_env() and anything rank-dependent below ddp::standby_point() (docs/warm-restarts.md)");
  Vars vars;
  for (const char* name : kNames) {
    if (const char* value = std::getenv(name)) vars[name] = value;
  }
  return from_map(vars);
}

std::map<std::string, std::string> WorkerEnv::to_map() const {
  Vars vars{{"RANK", std::to_string(rank)},
            {"WORLD_SIZE", std::to_string(world_size)},
            {"LOCAL_RANK", std::to_string(local_rank)},
            {"LOCAL_WORLD_SIZE", std::to_string(local_world_size)},
            {"GROUP_RANK", std::to_string(group_rank)},
            {"GROUP_WORLD_SIZE", std::to_string(group_world_size)},
            {"ROLE_NAME", role_name},
            {"ROLE_RANK", std::to_string(role_rank)},
            {"ROLE_WORLD_SIZE", std::to_string(role_world_size)},
            {"MASTER_ADDR", master_addr},
            {"TORCHELASTIC_RESTART_COUNT", std::to_string(restart_count)},
            {"TORCHELASTIC_MAX_RESTARTS", std::to_string(max_restarts)},
            {"TORCHELASTIC_RUN_ID", run_id}};
  if (master_port > 0) vars["MASTER_PORT"] = std::to_string(master_port);
  if (!error_file.empty()) vars["TORCHELASTIC_ERROR_FILE"] = error_file;
  if (use_agent_store) vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  return vars;
}

}  // namespace ddp
