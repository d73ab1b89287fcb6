#include "launcher/supervise/single_node_agent.hpp"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/base/stop_note.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/os/process.hpp"
#include "launcher/supervise/event_log.hpp"
#include "launcher/supervise/failure_report.hpp"
#include "launcher/supervise/recovery_log.hpp"
#include "launcher/supervise/status_endpoint.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "launcher/supervise/termination_log.hpp"
#include "launcher/supervise/worker_launches.hpp"
#include "launcher/supervise/worker_store.hpp"
#include "launcher/worker/output.hpp"

namespace ddp::launch::supervise {
namespace {

void write_launcher_error_file(const cli::Environment& env, const WorkerOutcome& root, const ReportContext& ctx) {
  auto path = cli::lookup(env, "TORCHELASTIC_ERROR_FILE");
  if (!path || path->empty()) return;
  std::ofstream out(*path);
  if (out) out << launcher_error_record(root, ctx) << "\n";
}

// No restart left: the failure report on stderr, the launcher's error file, the exit code.
int report_failure(const JobConfig& job, const cli::Environment& env, const AttemptResult& result, int attempt,
                   worker::RunLayout& layout) {
  const WorkerOutcome& root = result.outcomes[*result.root_cause];
  keep_reported_error_file(layout, root);
  const ReportContext ctx{job.program, os::host_name(), attempt, job.max_restarts};
  worker::write_all(STDERR_FILENO, format_failure_report(ctx, result.outcomes, *result.root_cause));
  write_launcher_error_file(env, root, ctx);
  write_termination_log(job.status.termination_log, termination_message(ctx, root));
  return failure_exit_code(root);
}

void restart_notice(const JobConfig& job, const AttemptResult& result, int attempt) {
  const WorkerOutcome& root = result.outcomes[*result.root_cause];
  worker::launcher_notice(
      fmt::format("attempt {} failed (rank {}: {}); restarting all {} workers (restart {} "
                  "of {})",
                  attempt, root.rank, is_hang(root.failure) ? "hang" : root.status.describe(), job.devices.nproc,
                  attempt + 1, job.max_restarts));
}

}  // namespace

worker::GroupPlan single_node_group(const JobConfig& job, const SingleNodeSpec& node) {
  const int nproc = job.devices.nproc;
  NodePlacement where{node.node_rank, node.nnodes, node.node_rank * nproc, node.nnodes * nproc, node.master_addr, 0, 0};
  where.agent_store = job.launcher_worker_store;  // node 0's launcher hosts it
  if (!node.master_port) {
    where.master_port = os::pick_free_port();
  } else {
    where.master_port = *node.master_port;
    if (node.node_rank == 0) os::ensure_port_free(node.master_addr, where.master_port);
  }
  return group_plan(job, where);
}

namespace {

// The attempt's workers' store, listening at MASTER_PORT before any worker starts. A port
// picked here may be taken between the pick and the bind: then another is picked.
std::unique_ptr<c10d::Server> host_worker_store(const JobConfig& job, const SingleNodeSpec& node,
                                                worker::GroupPlan& plan) {
  const std::string host = os::store_listen_host(plan.master_addr);
  for (int tries = 1;; ++tries) {
    try {
      auto server = listen_worker_store(host, plan.master_port, job.restrict_worker_store_peers);
      server->serve();
      return server;
    } catch (const LaunchError& e) {
      if (node.master_port || e.exit_code() != exit_code::kAddressInUse || tries == 3) throw;
      plan.master_port = os::pick_free_port();
    }
  }
}

int run_attempts(const JobConfig& job, const SingleNodeSpec& node, const cli::Environment& env, worker::GroupPlan& plan,
                 worker::RunLayout& layout, EventLog& events, SnapshotRegions& snapshots) {
  Supervisor supervisor(job.supervisor);
  supervisor.set_event_log(&events);
  RecoveryLog recovery(events);  // each restart's timeline
  supervisor.set_attempt_observer(&recovery);
  StatusBoard board = make_status_board(job, node.node_rank, node.nnodes);  // what the status endpoint shows
  supervisor.set_status_board(&board);
  recovery.set_status_board(&board);
  std::unique_ptr<StatusEndpoint> endpoint;
  if (job.status.enabled)
    endpoint =
        std::make_unique<StatusEndpoint>(supervisor, board, job.status, shown_worker_args(job), layout.run_dir());
  events.set_tap([&board](const std::string& line) { board.add_event(line); });
  struct Untap {  // the board goes with this function; the log may still be written after it
    EventLog& log;
    ~Untap() { log.set_tap(nullptr); }
  } untap{events};
  enable_warm_restarts(supervisor, job);
  for (int attempt = 0;; ++attempt) {
    plan.restart_count = attempt;
    events.set_attempt(attempt);
    board.attempt = attempt;
    board.world_size = plan.world_size;
    supervisor.set_standbys_wanted(attempt < job.max_restarts);  // a restart is left to take over
    std::vector<WorkerLaunch> launches = prepare_attempt(job, env, plan, layout, &snapshots);
    std::unique_ptr<c10d::Server> store;
    if (plan.agent_store && node.node_rank == 0) store = host_worker_store(job, node, plan);
    recovery.rendezvous_done();
    AttemptResult result = supervisor.run_attempt(std::move(launches));
    store.reset();  // the attempt's workers are gone: its store may go too
    recovery.attempt_ended(result.kind == AttemptResult::Kind::kSucceeded);
    if (result.kind == AttemptResult::Kind::kSucceeded) {
      snapshots.persist(PersistReason::kEnd);  // the regions' destructor waits for it
      events.write("finish", {{"outcome", "succeeded"}, {"exit_code", exit_code::kSuccess}});
      return exit_code::kSuccess;
    }
    if (result.kind == AttemptResult::Kind::kInterrupted) {
      snapshots.persist(PersistReason::kStop);
      worker::launcher_notice("stopped" + stopped_how(result.signal));
      events.write("finish", {{"outcome", "interrupted"},
                              {"signal", signal_name(result.signal)},
                              {"reason", stop_reason().value_or("")},
                              {"exit_code", exit_code::from_signal(result.signal)}});
      return exit_code::from_signal(result.signal);
    }
    const bool final = attempt >= job.max_restarts || supervisor.interrupted_by() != 0;
    // In the background: the restart does not wait for it; the job's end does.
    snapshots.persist(!final                             ? PersistReason::kFailure
                      : supervisor.interrupted_by() != 0 ? PersistReason::kStop
                                                         : PersistReason::kEnd);
    log_worker_failure(events, result.outcomes[*result.root_cause], final);
    if (final) {
      const int code = report_failure(job, env, result, attempt, layout);
      events.write("finish", {{"outcome", "failed"}, {"exit_code", code}});
      return code;
    }
    restart_notice(job, result, attempt);
    ++board.restarts[result.outcomes[*result.root_cause].failure];
    events.set_attempt(attempt + 1);
    events.write("restart", {{"restart", attempt + 1}, {"max_restarts", job.max_restarts}});
    recovery.begin(failed_attempt(result, std::chrono::system_clock::now()));
    if (!node.master_port) plan.master_port = os::pick_free_port();  // the old port may linger in TIME_WAIT
  }
}

}  // namespace

int run_single_node_agent(const JobConfig& job, const SingleNodeSpec& node, const cli::Environment& env) {
  worker::GroupPlan plan = single_node_group(job, node);
  notice_omp_threads(env, job.devices.nproc);
  worker::RunLayout layout(job.layout, env);
  if (layout.enabled() && !layout.temporary()) worker::launcher_notice("logs in " + layout.run_dir());
  EventLog events(layout.run_dir());
  events.set_console(job.events_to_console);
  log_start(events, job);
  try {
    SnapshotRegions snapshots(env);  // the job's: kept across restarts, removed on every way out
    snapshots.persist_to(job.snapshot_persist, &events);
    return run_attempts(job, node, env, plan, layout, events, snapshots);
  } catch (const LaunchError& e) {  // not swallowed: logged, then main() reports it
    events.write("finish", {{"outcome", "error"}, {"exit_code", e.exit_code()}, {"message", e.what()}});
    throw;
  }
}

}  // namespace ddp::launch::supervise
