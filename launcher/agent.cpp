#include "launcher/agent.hpp"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "launcher/supervise/worker_launches.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/multinode/multinode_agent.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/worker/output.hpp"

namespace ddp::launch {
namespace {

bool explicit_port(const LaunchOptions& o) { return o.master_port && *o.master_port != 0 && !o.standalone; }

// Ranks and the workers' store for a single node (and for --dry-run, which does not rendezvous).
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
  if (!explicit_port(o)) {
    plan.master_port = pick_free_port();
  } else {
    plan.master_port = *o.master_port;
    if (o.node_rank == 0) ensure_port_free(o.master_addr, plan.master_port);
  }
  return plan;
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
  const JobSetup job = setup_job(o, env);
  const std::string run_id = o.standalone ? random_id() : o.rdzv_id;
  if (is_multi_node(o) && !o.dry_run) return run_multi_node_agent(o, env, job, run_id);
  GroupPlan plan = plan_group(o, job.devices.nproc, run_id);

  if (o.dry_run) {
    const RunLayout no_files;
    return print_dry_run(prepare_attempt(o, env, plan, job, no_files), plan, env);
  }
  notice_omp_threads(env, job.devices.nproc);
  RunLayout layout(o, env, run_id);
  if (layout.enabled() && !layout.temporary()) launcher_notice("logs in " + layout.run_dir());
  Supervisor supervisor(supervisor_config(o));
  const ReportContext base_ctx{o.program, host_name(), 0, o.max_restarts};

  for (int attempt = 0;; ++attempt) {
    plan.restart_count = attempt;
    AttemptResult result =
        supervisor.run_attempt(prepare_attempt(o, env, plan, job, layout));
    if (result.kind == AttemptResult::Kind::kSucceeded) return exit_code::kSuccess;
    if (result.kind == AttemptResult::Kind::kInterrupted) {
      launcher_notice(fmt::format("stopped by {}", signal_name(result.signal)));
      return exit_code::from_signal(result.signal);
    }
    const WorkerOutcome& root = result.outcomes[*result.root_cause];
    if (attempt < o.max_restarts && supervisor.interrupted_by() == 0) {
      launcher_notice(fmt::format("attempt {} failed (rank {}: {}); restarting all {} workers (restart {} "
                         "of {})",
                         attempt, root.rank, root.status.describe(), job.devices.nproc, attempt + 1,
                         o.max_restarts));
      if (!explicit_port(o))
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
