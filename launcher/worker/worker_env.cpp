#include "launcher/worker/worker_env.hpp"

namespace ddp::launch::worker {

const std::vector<std::string>& contract_variables() {
  static const std::vector<std::string> kNames = {
      // who the worker is
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_NAME",
      "ROLE_RANK", "ROLE_WORLD_SIZE",
      // its store, its restarts and its error file
      "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_RUN_ID",
      "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_SIGNALS_TO_HANDLE",
      // defaults the launcher sets, and the GPUs
      "OMP_NUM_THREADS", "TORCH_NCCL_ASYNC_ERROR_HANDLING", "CUDA_VISIBLE_DEVICES"};
  return kNames;
}

cli::Environment worker_environment(const cli::Environment& base, const GroupPlan& plan, const WorkerSlot& slot) {
  cli::Environment env = base;
  const int rank = global_rank(plan, slot.local_rank);
  env["RANK"] = std::to_string(rank);
  env["LOCAL_RANK"] = std::to_string(slot.local_rank_zero ? 0 : slot.local_rank);
  env["WORLD_SIZE"] = std::to_string(plan.world_size);
  env["LOCAL_WORLD_SIZE"] = std::to_string(plan.local_world_size);
  env["GROUP_RANK"] = std::to_string(plan.node_rank);
  env["GROUP_WORLD_SIZE"] = std::to_string(plan.nnodes);
  env["ROLE_NAME"] = plan.role;
  env["ROLE_RANK"] = std::to_string(plan.role_base_rank + slot.local_rank);
  env["ROLE_WORLD_SIZE"] = std::to_string(plan.role_world_size);
  env["MASTER_ADDR"] = plan.master_addr;
  env["MASTER_PORT"] = std::to_string(plan.master_port);
  env["TORCHELASTIC_RESTART_COUNT"] = std::to_string(plan.restart_count);
  env["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(plan.max_restarts);
  env["TORCHELASTIC_RUN_ID"] = plan.run_id;
  // True only when a launcher's c10d-compatible store really serves MASTER_ADDR:MASTER_PORT:
  // then every rank is a client; False: worker rank 0 hosts the TCPStore.
  env["TORCHELASTIC_USE_AGENT_STORE"] = plan.agent_store ? "True" : "False";
  env["TORCHELASTIC_ERROR_FILE"] = slot.error_file;
  // As torchrun (launch_agent): the agent's --signals-to-handle, as given.
  env["TORCHELASTIC_SIGNALS_TO_HANDLE"] = plan.signals_to_handle;
  // As torchrun 2.15 (_setup_local_watchdog): the pipe its FileTimerServer reads.
  if (!plan.timer_file.empty()) env["TORCHELASTIC_TIMER_FILE"] = plan.timer_file;
  // As torchrun 2.x: one thread per worker only when several share the node and the user
  // chose nothing.
  if (plan.local_world_size > 1) env.emplace("OMP_NUM_THREADS", "1");
  // Only the name PyTorch >= 2.2 reads (it warns in every rank about the old one, which
  // passes through untouched when the user set it: torch < 2.2 reads only that one).
  env.emplace("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1");
  if (slot.visible_devices) env["CUDA_VISIBLE_DEVICES"] = *slot.visible_devices;
  // Last, so that the user's own entries (and their sitecustomize) come first.
  if (!slot.python_hooks_dir.empty()) {
    std::string& path = env["PYTHONPATH"];
    if (!path.empty() && path.back() != ':') path += ':';
    path += slot.python_hooks_dir;
  }
  return env;
}

std::string substitute_local_rank(const std::string& arg, int local_rank) {
  static const std::string kMacro = "${local_rank}";
  std::string out = arg;
  for (size_t pos = out.find(kMacro); pos != std::string::npos; pos = out.find(kMacro, pos)) {
    std::string value = std::to_string(local_rank);
    out.replace(pos, kMacro.size(), value);
    pos += value.size();
  }
  return out;
}

}  // namespace ddp::launch::worker
