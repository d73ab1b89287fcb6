#include "launcher/supervise/single_node_agent.hpp"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/os/process.hpp"
#include "launcher/supervise/failure_report.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "launcher/supervise/worker_launches.hpp"
#include "launcher/worker/output.hpp"

namespace ddp::launch {
namespace {

void write_launcher_error_file(const Environment& env, const WorkerOutcome& root,
                               const ReportContext& ctx) {
  auto path = lookup(env, "TORCHELASTIC_ERROR_FILE");
  if (!path || path->empty()) return;
  std::ofstream out(*path);
  if (out) out << launcher_error_record(root, ctx) << "\n";
}

// No restart left: the failure report on stderr, the launcher's error file, the exit code.
int report_failure(const JobConfig& job, const Environment& env, const AttemptResult& result,
                   int attempt, RunLayout& layout) {
  const WorkerOutcome& root = result.outcomes[*result.root_cause];
  keep_reported_error_file(layout, root);
  const ReportContext ctx{job.program, host_name(), attempt, job.max_restarts};
  write_all(STDERR_FILENO, format_failure_report(ctx, result.outcomes, *result.root_cause));
  write_launcher_error_file(env, root, ctx);
  return failure_exit_code(root);
}

void restart_notice(const JobConfig& job, const AttemptResult& result, int attempt) {
  const WorkerOutcome& root = result.outcomes[*result.root_cause];
  launcher_notice(fmt::format("attempt {} failed (rank {}: {}); restarting all {} workers (restart {} "
                              "of {})",
                              attempt, root.rank, root.hang.empty() ? root.status.describe() : "hang",
                              job.devices.nproc,
                              attempt + 1, job.max_restarts));
}

}  // namespace

GroupPlan single_node_group(const JobConfig& job, const SingleNodeSpec& node) {
  const int nproc = job.devices.nproc;
  NodePlacement where{node.node_rank, node.nnodes, node.node_rank * nproc, node.nnodes * nproc,
                      node.master_addr, 0, 0};
  if (!node.master_port) {
    where.master_port = pick_free_port();
  } else {
    where.master_port = *node.master_port;
    if (node.node_rank == 0) ensure_port_free(node.master_addr, where.master_port);
  }
  return group_plan(job, where);
}

int run_single_node_agent(const JobConfig& job, const SingleNodeSpec& node, const Environment& env) {
  GroupPlan plan = single_node_group(job, node);
  notice_omp_threads(env, job.devices.nproc);
  RunLayout layout(job.layout, env);
  if (layout.enabled() && !layout.temporary()) launcher_notice("logs in " + layout.run_dir());
  Supervisor supervisor(job.supervisor);
  for (int attempt = 0;; ++attempt) {
    plan.restart_count = attempt;
    AttemptResult result = supervisor.run_attempt(prepare_attempt(job, env, plan, layout));
    if (result.kind == AttemptResult::Kind::kSucceeded) return exit_code::kSuccess;
    if (result.kind == AttemptResult::Kind::kInterrupted) {
      launcher_notice(fmt::format("stopped by {}", signal_name(result.signal)));
      return exit_code::from_signal(result.signal);
    }
    if (attempt >= job.max_restarts || supervisor.interrupted_by() != 0)
      return report_failure(job, env, result, attempt, layout);
    restart_notice(job, result, attempt);
    if (!node.master_port) plan.master_port = pick_free_port();  // the old port may linger in TIME_WAIT
  }
}

}  // namespace ddp::launch
