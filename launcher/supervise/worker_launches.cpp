#include "launcher/supervise/worker_launches.hpp"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/worker/output.hpp"

namespace ddp::launch {

std::string random_id() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

namespace {

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=:,@%+") == std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::vector<WorkerLaunch> prepare_attempt(const LaunchOptions& o, const Environment& env,
                                          const GroupPlan& plan, const JobSetup& job,
                                          const RunLayout& layout) {
  const DevicePlan& devices = job.devices;
  const WorkerCommand& cmd = job.command;
  std::vector<WorkerLaunch> out;
  for (int local = 0; local < plan.local_world_size; ++local) {
    WorkerLaunch w;
    w.local_rank = local;
    w.rank = global_rank(plan, local);
    const std::string dir = layout.worker_dir(plan.restart_count, local);
    w.error_file = dir.empty() ? "" : dir + "/error.json";
    if (!w.error_file.empty()) ::unlink(w.error_file.c_str());
    WorkerSlot slot{local, w.error_file, devices.visible_devices[local], devices.local_rank_zero};
    w.spawn.executable = cmd.executable;
    w.spawn.argv = cmd.argv_for(local);
    w.spawn.env = environment_entries(worker_environment(env, plan, slot));
    w.prefix = expand_prefix_template(o.log_line_prefix_template, w.rank, local, o.role);
    const int redirect = o.redirects.for_rank(local);
    const int tee = o.tee.for_rank(local);
    const bool shown = !o.local_ranks_filter || o.local_ranks_filter->count(local) > 0;
    auto route = [&](int bit, bool& to_console, std::string& log, const char* name) {
      to_console = shown && (!(redirect & bit) || (tee & bit));
      if (!dir.empty() && (layout.keeps_all_logs() || ((redirect | tee) & bit)))
        log = dir + "/" + name;
    };
    route(kStdout, w.stdout_to_console, w.stdout_log, "stdout.log");
    route(kStderr, w.stderr_to_console, w.stderr_log, "stderr.log");
    out.push_back(std::move(w));
  }
  return out;
}

int print_dry_run(const std::vector<WorkerLaunch>& launches, const GroupPlan& plan, const Environment& base) {
  std::string out = fmt::format(
      "ddp-launch: dry run: {} worker{} on node {} of {} (world size {}); nothing is started\n",
      launches.size(), launches.size() == 1 ? "" : "s", plan.node_rank, plan.nnodes, plan.world_size);
  if (plan.nnodes > 1)
    out += "(multi-node: the rendezvous settles the ranks of heterogeneous nodes, and MASTER_ADDR/"
           "MASTER_PORT point at group rank 0's node and a port it picks)\n";
  for (const auto& w : launches) {
    out += fmt::format("rank {} (local_rank {}):\n  command:", w.rank, w.local_rank);
    for (const auto& a : w.spawn.argv) out += " " + shell_quote(a);
    out += "\n";
    std::vector<char*> entries;
    for (const auto& e : w.spawn.env) entries.push_back(const_cast<char*>(e.c_str()));
    entries.push_back(nullptr);
    const Environment env = environment_from(entries.data());
    for (const auto& name : contract_variables()) {
      auto value = lookup(env, name);
      if (!value) continue;
      bool inherited = lookup(base, name) == value && name != "RANK";
      out += fmt::format("  {}={}{}\n", name, shell_quote(*value), inherited ? "  (inherited)" : "");
    }
  }
  write_all(STDOUT_FILENO, out);
  return exit_code::kSuccess;
}

JobSetup setup_job(const LaunchOptions& o, const Environment& env) {
  DeviceInputs inputs;
  inputs.cuda_visible_devices = lookup(env, "CUDA_VISIBLE_DEVICES");
  inputs.driver_count = count_cuda_devices;
  inputs.cpu_count = static_cast<int>(std::thread::hardware_concurrency());
  JobSetup job;
  job.devices = plan_devices(o, inputs);
  job.command = resolve_worker_command(o, env);
  return job;
}

SupervisorConfig supervisor_config(const LaunchOptions& o) {
  SupervisorConfig config;
  config.shutdown_timeout_s = o.shutdown_timeout_s;
  const auto& stops = default_stop_signals();
  for (int s : o.signals_to_handle)
    (std::find(stops.begin(), stops.end(), s) != stops.end() ? config.stop_signals : config.forward_signals)
        .push_back(s);
  return config;
}

void notice_omp_threads(const Environment& env, int nproc) {
  if (!lookup(env, "OMP_NUM_THREADS") && nproc > 1)
    launcher_notice("OMP_NUM_THREADS is not set: each worker gets OMP_NUM_THREADS=1 so that workers "
                    "do not oversubscribe the CPUs; set it yourself to tune");
}

}  // namespace ddp::launch
