

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/node/node_session.hpp"
#include "launcher/node/preflight_check.hpp"
#include "launcher/node/single_node_agent.hpp"
#include "launcher/node/worker_launches.hpp"
#include "launcher/node/worker_store.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/os/process.hpp"
#include "launcher/report/event_log.hpp"
#include <fmt/format.h>

namespace ddp::launch::node {
namespace {

void restart_notice(const JobConfig& job, const report::AttemptResult& result, int attempt) {
  const report::WorkerOutcome& root = result.outcomes[*result.root_cause];
  console::launcher_notice(
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
      auto server = listen_worker_store(host, plan.master_port, job.restrict_worker_store_peers,
                                        static_cast<size_t>(plan.world_size));
      server->serve();
      return server;
    } catch (const LaunchError& e) {
      if (node.master_port || e.exit_code() != exit_code::kAddressInUse || tries == 3) throw;
      plan.master_port = os::pick_free_port();
    }
  }
}

// The attempt's end as the job's end (JobEnd writes it): nullopt when a restart follows.
std::optional<int> conclude(NodeSession& session, const JobConfig& job, const report::AttemptResult& result,
                            int attempt) {
  JobEnd& end = session.end();
  if (result.kind == report::AttemptResult::Kind::kSucceeded) {
    end.finished(exit_code::kSuccess);
    return exit_code::kSuccess;
  }
  if (result.kind == report::AttemptResult::Kind::kInterrupted) {
    console::launcher_notice("stopped" + stopped_how(result.signal, result.stop_note));
    return end.interrupted(result.signal, result.stop_note);
  }
  const bool final = attempt >= job.max_restarts || session.stops().interrupted_by() != 0;
  log_worker_failure(session.events(), result.outcomes[*result.root_cause], final);
  if (!final) return std::nullopt;
  const int code = end.report_own_failure(result, attempt);
  end.finished(code);
  return code;
}

int run_attempts(NodeSession& session, const JobConfig& job, const SingleNodeSpec& node, const cli::Environment& env,
                 worker::GroupPlan& plan) {
  for (int attempt = 0;; ++attempt) {
    plan.restart_count = attempt;
    session.begin_attempt(attempt, plan.world_size);
    std::vector<worker::WorkerLaunch> launches =
        prepare_attempt(job, env, plan, session.layout(), &session.snapshots());
    std::unique_ptr<c10d::Server> store;
    if (plan.agent_store && node.node_rank == 0) store = host_worker_store(job, node, plan);
    report::AttemptResult result = session.run_attempt(std::move(launches));
    store.reset();  // the attempt's workers are gone: its store may go too
    const bool job_ends = result.kind != report::AttemptResult::Kind::kFailed || attempt >= job.max_restarts ||
                          session.stops().interrupted_by() != 0;
    session.after_attempt(result, job_ends);  // in the background; the job's end waits for it
    if (std::optional<int> code = conclude(session, job, result, attempt)) return *code;
    restart_notice(job, result, attempt);
    session.count_restart(result.outcomes[*result.root_cause].failure);
    session.events().set_attempt(attempt + 1);
    session.events().write("restart", {{"restart", attempt + 1}, {"max_restarts", job.max_restarts}});
    session.recovery().begin(failed_attempt(result, std::chrono::system_clock::now()));
    if (!node.master_port) plan.master_port = os::pick_free_port();  // the old port may linger in TIME_WAIT
  }
}

}  // namespace

int run_single_node_agent(const JobConfig& job, const SingleNodeSpec& node, const cli::Environment& env,
                          const supervise::StopInputSpec& stop_input) {
  worker::GroupPlan plan = single_node_group(job, node);
  NodeSession session(job, env, {-1, node.node_rank, node.nnodes}, stop_input);
  try {
    if (job.preflight)
      run_preflight(*job.preflight,
                    job_needs(job.devices, plan.local_world_size,
                              preflight_folders(env, session.layout().run_dir(), job.snapshot_persist.dir),
                              job.command.executable),
                    {&session.events(), &session.board(), true});
    return run_attempts(session, job, node, env, plan);
  } catch (const LaunchError& e) {  // not swallowed: logged, then main() reports it
    session.end().failed_by_error(e.exit_code(), e.what());
    throw;
  }
}

}  // namespace ddp::launch::node
