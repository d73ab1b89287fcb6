#include "launcher/agent.hpp"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "launcher/devices.hpp"
#include "launcher/exit_status.hpp"
#include "launcher/net.hpp"
#include "launcher/output.hpp"
#include "launcher/run_layout.hpp"
#include "launcher/supervisor.hpp"
#include "launcher/worker_command.hpp"
#include "launcher/worker_env.hpp"

namespace ddp::launch {
namespace {

void notice(const std::string& text) { write_all(STDERR_FILENO, "ddp-launch: " + text + "\n"); }

std::string random_id() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-./=:,@%+") == std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Ranks and the store address for this node (static rendezvous: no coordination needed).
GroupPlan plan_group(const LaunchOptions& o, int nproc, const std::string& run_id) {
  GroupPlan plan;
  plan.node_rank = o.node_rank;
  plan.nnodes = o.nnodes_max;
  plan.local_world_size = nproc;
  plan.base_rank = o.node_rank * nproc;
  plan.world_size = o.nnodes_max * nproc;
  plan.master_addr = o.master_addr;
  plan.run_id = run_id;
  plan.role = o.role;
  plan.max_restarts = o.max_restarts;
  const bool explicit_port = o.master_port && *o.master_port != 0 && !o.standalone;
  if (!explicit_port) {
    plan.master_port = pick_free_port();
  } else {
    plan.master_port = *o.master_port;
    if (o.node_rank == 0) ensure_port_free(o.master_addr, plan.master_port);
  }
  return plan;
}

std::vector<WorkerLaunch> prepare_attempt(const LaunchOptions& o, const Environment& env,
                                          const GroupPlan& plan, const DevicePlan& devices,
                                          const WorkerCommand& cmd, const RunLayout& layout) {
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

int print_dry_run(const std::vector<WorkerLaunch>& launches, const GroupPlan& plan,
                  const Environment& base) {
  std::string out = fmt::format(
      "ddp-launch: dry run: {} worker{} on node {} of {} (world size {}); nothing is started\n",
      launches.size(), launches.size() == 1 ? "" : "s", plan.node_rank, plan.nnodes, plan.world_size);
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

void write_launcher_error_file(const Environment& env, const WorkerOutcome& root,
                               const ReportContext& ctx) {
  auto path = lookup(env, "TORCHELASTIC_ERROR_FILE");
  if (!path || path->empty()) return;
  std::ofstream out(*path);
  if (out) out << launcher_error_record(root, ctx) << "\n";
}

}  // namespace

int run_agent(const LaunchOptions& o, const Environment& env) {
  DeviceInputs device_inputs;
  device_inputs.cuda_visible_devices = lookup(env, "CUDA_VISIBLE_DEVICES");
  device_inputs.driver_count = count_cuda_devices;
  device_inputs.cpu_count = static_cast<int>(std::thread::hardware_concurrency());
  const DevicePlan devices = plan_devices(o, device_inputs);
  const WorkerCommand cmd = resolve_worker_command(o, env);
  const std::string run_id = o.standalone ? random_id() : o.rdzv_id;
  GroupPlan plan = plan_group(o, devices.nproc, run_id);

  if (o.dry_run) {
    const RunLayout no_files;
    return print_dry_run(prepare_attempt(o, env, plan, devices, cmd, no_files), plan, env);
  }
  if (!lookup(env, "OMP_NUM_THREADS") && devices.nproc > 1)
    notice("OMP_NUM_THREADS is not set: each worker gets OMP_NUM_THREADS=1 so that workers do not "
           "oversubscribe the CPUs; set it yourself to tune");
  RunLayout layout(o, env, run_id);
  if (layout.enabled() && !layout.temporary()) notice("logs in " + layout.run_dir());

  SupervisorConfig config;
  config.shutdown_timeout_s = o.shutdown_timeout_s;
  for (int s : o.signals_to_handle) {
    bool stop = std::find(default_stop_signals().begin(), default_stop_signals().end(), s) !=
                default_stop_signals().end();
    (stop ? config.stop_signals : config.forward_signals).push_back(s);
  }
  Supervisor supervisor(config);
  const ReportContext base_ctx{o.program, host_name(), 0, o.max_restarts};

  for (int attempt = 0;; ++attempt) {
    plan.restart_count = attempt;
    AttemptResult result =
        supervisor.run_attempt(prepare_attempt(o, env, plan, devices, cmd, layout));
    if (result.kind == AttemptResult::Kind::kSucceeded) return exit_code::kSuccess;
    if (result.kind == AttemptResult::Kind::kInterrupted) {
      notice(fmt::format("stopped by {}", signal_name(result.signal)));
      return exit_code::from_signal(result.signal);
    }
    const WorkerOutcome& root = result.outcomes[*result.root_cause];
    if (attempt < o.max_restarts && supervisor.interrupted_by() == 0) {
      notice(fmt::format("attempt {} failed (rank {}: {}); restarting all {} workers (restart {} "
                         "of {})",
                         attempt, root.rank, root.status.describe(), devices.nproc, attempt + 1,
                         o.max_restarts));
      if (plan.nnodes == 1 && !(o.master_port && *o.master_port != 0 && !o.standalone))
        plan.master_port = pick_free_port();  // the old store's port may linger in TIME_WAIT
      continue;
    }
    std::vector<WorkerOutcome> others;
    for (size_t i = 0; i < result.outcomes.size(); ++i)
      if (i != *result.root_cause) others.push_back(result.outcomes[i]);
    ReportContext ctx = base_ctx;
    ctx.restart_count = attempt;
    write_all(STDERR_FILENO, format_failure_report(ctx, root, others));
    write_launcher_error_file(env, root, ctx);
    return root.status.launcher_exit_code();
  }
}

}  // namespace ddp::launch
