

#include "launcher/base/clock.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/node/agent_loop.hpp"
#include "launcher/node/node_session.hpp"
#include "launcher/preflight/node_check.hpp"
#include "launcher/node/single_node_agent.hpp"
#include "launcher/node/worker_launches.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/os/process.hpp"
#include "launcher/report/event_log.hpp"
#include <fmt/format.h>

namespace ddp::launch::node {
namespace {

void restart_notice(const JobConfig& job, const report::AttemptResult& result, int attempt) {
  const report::WorkerOutcome& root = result.outcomes[*result.root_cause];
  console::launcher_notice(
      fmt::format("attempt {} failed ({}); restarting all {} workers (restart {} "
                  "of {})",
                  attempt,
                  has_verdict(root.failure) && !is_hang(root.failure)
                      ? root.verdict  // "rank 3: timer 'load_batch' expired after 60.0 s: SIGKILL"
                      : fmt::format("rank {}: {}", root.rank, is_hang(root.failure) ? "hang" : root.status.describe()),
                  job.devices.nproc, attempt + 1, job.max_restarts));
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

// This node alone: attempt after attempt of its group, restarted as a whole up to
// --max-restarts times (a fresh port each time when none was given), until one succeeds, is
// stopped, or fails with no restart left.
class LocalRounds : public RoundSource {
 public:
  // plan: attempt 0's group (single_node_group).
  LocalRounds(NodeSession& session, const JobConfig& job, const SingleNodeSpec& node, const cli::Environment& env,
              worker::GroupPlan plan)
      : session_(session), job_(job), node_(node), env_(env), plan_(std::move(plan)) {}

  std::optional<int> prepare() override {
    if (!job_.preflight) return std::nullopt;
    session_.board().goodput.phase(report::Badput::kPreflight, unix_now());
    preflight::run_preflight(
        session_.children(), *job_.preflight,
        preflight::job_needs(job_.devices, plan_.local_world_size,
                             preflight::preflight_folders(env_, session_.layout().run_dir(), job_.snapshot_persist.dir),
                             job_.command.executable),
        {&session_.events(), &session_.board(), true});
    session_.board().goodput.phase(report::Badput::kStartup, unix_now());
    return std::nullopt;
  }

  std::variant<NextAttempt, int> next_attempt() override {
    plan_.restart_count = attempt_;
    if (plan_.agent_store && node_.node_rank == 0)
      session_.worker_store().host_attempt(job_, plan_, node_.master_port.has_value());
    return NextAttempt{plan_, &env_, {}};
  }

  std::optional<int> settle(const report::AttemptResult& result) override {
    session_.worker_store().close();  // the attempt's workers are gone: its store may go too
    const bool job_ends = result.kind != report::AttemptResult::Kind::kFailed || final_failure(result);
    session_.after_attempt(result, job_ends);  // in the background; the job's end waits for it
    if (std::optional<int> code = conclude(result)) return code;
    restart_notice(job_, result, attempt_);
    session_.count_restart(result.outcomes[*result.root_cause].failure);
    session_.events().set_attempt(++attempt_);
    session_.events().write("restart", {{"restart", attempt_}, {"max_restarts", job_.max_restarts}});
    session_.recovery().begin(failed_attempt(result, std::chrono::system_clock::now()));
    if (!node_.master_port) plan_.master_port = os::pick_free_port();  // the old port may linger in TIME_WAIT
    return std::nullopt;
  }

 private:
  // The attempt's end as the job's end (JobEnd writes it): nullopt when a restart follows.
  std::optional<int> conclude(const report::AttemptResult& result) {
    JobEnd& end = session_.end();
    if (result.kind == report::AttemptResult::Kind::kSucceeded) {
      end.finished(exit_code::kSuccess);
      return exit_code::kSuccess;
    }
    if (result.kind == report::AttemptResult::Kind::kInterrupted) {
      console::launcher_notice("stopped" + stopped_how(result.signal, result.stop_note));
      return end.interrupted(result.signal, result.stop_note);
    }
    const bool final = final_failure(result);
    log_worker_failure(session_.events(), result.outcomes[*result.root_cause], final);
    if (!final) return std::nullopt;
    const int code = end.report_own_failure(result, attempt_);
    end.finished(code);
    return code;
  }

  // No restart follows a failure: none left, a stop signal, or a worker that could not be killed.
  bool final_failure(const report::AttemptResult& result) const {
    return attempt_ >= job_.max_restarts || session_.stops().interrupted_by() != 0 || !result.unreaped_ranks.empty();
  }

  NodeSession& session_;
  const JobConfig& job_;
  const SingleNodeSpec& node_;
  const cli::Environment& env_;
  worker::GroupPlan plan_;
  int attempt_ = 0;
};

}  // namespace

int run_single_node_agent(const JobConfig& job, const SingleNodeSpec& node, const cli::Environment& env,
                          const supervise::StopInputSpec& stop_input) {
  worker::GroupPlan plan = single_node_group(job, node);  // a --master-port in use: before anything is set up
  NodeSession session(job, env, {-1, node.node_rank, node.nnodes}, stop_input);
  try {
    LocalRounds rounds(session, job, node, env, std::move(plan));
    return run_agent_loop(session, job, rounds);
  } catch (const LaunchError& e) {  // not swallowed: logged, then main() reports it
    session.end().failed_by_error(e.exit_code(), e.what());
    throw;
  }
}

}  // namespace ddp::launch::node
