

#include "launcher/base/clock.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/node/node_session.hpp"
#include "launcher/node/worker_launches.hpp"
#include "launcher/os/process.hpp"
#include "launcher/status/status_endpoint.hpp"
#include "launcher/warm/standby_pool.hpp"
#include <chrono>
#include <climits>
#include <unistd.h>

namespace ddp::launch::node {
namespace {

using Kind = report::AttemptResult::Kind;
using snapshot::PersistReason;

double unix_s(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

// How the attempt ended, into the goodput ledger: the step in flight at a failure here is
// redone, up to a verdict here is a hang, up to learning of one elsewhere is detection.
void account_attempt(report::GoodputLedger& ledger, const report::AttemptResult& result) {
  using Ending = report::GoodputLedger::Ending;
  const auto now = std::chrono::system_clock::now();
  const report::FailedAttempt f = report::failed_attempt(result, now);
  if (result.kind == Kind::kSucceeded || result.kind == Kind::kInterrupted)
    return ledger.attempt_ended(Ending::kFinished, unix_s(f.workers_stopped), unix_s(f.workers_stopped));
  if (result.kind == Kind::kFailed && result.root_cause) {
    const FailureKind kind = result.outcomes[*result.root_cause].failure;
    return ledger.attempt_ended(has_verdict(kind) || is_hang(kind) ? Ending::kHung : Ending::kCrashed,
                                unix_s(f.failure_seen), unix_s(f.workers_stopped));
  }
  auto learned = now;  // stopped for a failure elsewhere: learned just before the first exit
  for (const report::WorkerOutcome& o : result.outcomes) learned = std::min(learned, o.time);
  ledger.attempt_ended(Ending::kElsewhere, unix_s(learned), unix_s(f.workers_stopped));
}

report::StatusBoard job_board(const JobConfig& job, const NodeSeat& seat) {
  report::StatusBoard b;
  b.job = {job.program,     job.run_id,     job.role,    job.status.backend, cli::kLauncherVersion,
           os::host_name(), seat.node_rank, seat.nnodes, job.max_restarts};
  b.started_unix_s = unix_now();
  b.goodput = report::GoodputLedger(b.started_unix_s);
  return b;
}

std::unique_ptr<warm::StandbyPool> standby_pool(boost::asio::io_context& loop, os::ChildRegistry& children,
                                                os::Watchdog& watchdog, const JobConfig& job,
                                                contain::Containment& containment, report::EventLog& events) {
  if (job.standby.kind == warm::StandbyKind::kNone) return nullptr;
  return std::make_unique<warm::StandbyPool>(loop, children, watchdog, job.standby, &containment, &events);
}

// TORCHELASTIC_ENABLE_FILE_TIMER=1: the pipe the workers' FileTimerClients write to, made now.
std::unique_ptr<os::FifoLines> timer_pipe(boost::asio::io_context& loop, const JobConfig& job) {
  if (job.health.timer_file.empty()) return nullptr;
  auto pipe = std::make_unique<os::FifoLines>(loop, job.health.timer_file, PIPE_BUF);
  console::launcher_notice("file timers (TORCHELASTIC_ENABLE_FILE_TIMER) served on " + pipe->path());
  return pipe;
}

// The workers' thread notice comes before anything of the run is set up.
const worker::RunLayoutSpec& layout_after_notices(const JobConfig& job, const cli::Environment& env) {
  notice_omp_threads(env, job.devices.nproc);
  return job.layout;
}

// The job starts on this node: run_id, host, launcher pid, program, nproc, max_restarts,
// hang_timeout ("auto", or seconds; 0: off), straggler_threshold, containment (cgroup, subreaper).
void log_start(report::EventLog& log, const JobConfig& job, const contain::Containment& containment) {
  const double hang = job.supervisor.hang_timeout_s;
  log.write("start", {{"run_id", job.run_id},
                      {"host", os::host_name()},
                      {"launcher_pid", static_cast<long>(::getpid())},
                      {"program", job.program},
                      {"nproc", job.devices.nproc},
                      {"max_restarts", job.max_restarts},
                      hang < 0 ? report::EventField("hang_timeout", "auto") : report::EventField("hang_timeout", hang),
                      {"straggler_threshold", job.supervisor.straggler_threshold},
                      {"containment", containment.mode_name()}});
}

// The worker's arguments the endpoint may show: with --metrics-show-args only.
std::optional<std::vector<std::string>> shown_worker_args(const JobConfig& job) {
  if (!job.status.show_args) return std::nullopt;
  return job.command.argv_for(0);
}

}  // namespace

std::optional<snapshot::PersistReason> persist_reason(Kind kind, bool job_ends, bool stopping, bool membership) {
  if (kind == Kind::kInterrupted) return snapshot::PersistReason::kStop;
  if (kind == Kind::kSucceeded) return job_ends ? std::optional(snapshot::PersistReason::kEnd) : std::nullopt;
  if (membership) return std::nullopt;  // no failure: a bigger round
  if (!job_ends) return snapshot::PersistReason::kFailure;
  return stopping ? snapshot::PersistReason::kStop : snapshot::PersistReason::kEnd;
}

NodeSession::NodeSession(const JobConfig& job, const cli::Environment& env, const NodeSeat& seat,
                         const supervise::StopInputSpec& stop_input)
    : job_(job),
      stop_signals_(loop_, job.supervisor.stop_signals, job.supervisor.forward_signals),
      layout_(layout_after_notices(job, env), env),
      board_(job_board(job, seat)),
      events_(layout_.run_dir(), seat.event_node,
              {[this](const std::string& line) { board_.add_event(line); }, job.events_to_console}),
      recovery_(events_, &board_),
      snapshots_(env, job.snapshot_persist, &events_),
      end_(job, env, layout_, events_, snapshots_, board_.goodput),
      containment_(job.containment, children_),
      watchdog_(children_, containment_.watchdog_sweep()),
      standbys_(standby_pool(loop_, children_, watchdog_, job, containment_, events_)),
      timer_pipe_(timer_pipe(loop_, job)),
      supervisor_(loop_, children_, watchdog_, job.supervisor, stop_signals_,
                  {&events_, &recovery_, &board_, standbys_.get(), &containment_, timer_pipe_.get()}) {
  if (stop_input.fd >= 0)
    stop_input_ = std::make_unique<supervise::StopInputWatch>(loop_, stop_input, stop_signals_.requests());
  console::launcher_notice(containment_.describe());
  if (layout_.enabled() && !layout_.temporary()) console::launcher_notice("logs in " + layout_.run_dir());
  log_start(events_, job, containment_);
  if (!job.standby.cold_reason.empty()) console::launcher_notice(job.standby.cold_reason);
  if (job.status.enabled)
    endpoint_ =
        std::make_unique<status::StatusEndpoint>(loop_, board_, job.status, shown_worker_args(job), layout_.run_dir());
  if (job.health.health_check_port)
    health_check_ = std::make_unique<status::HealthCheckEndpoint>(
        loop_, board_, job.status.host.empty() ? "0.0.0.0" : job.status.host, *job.health.health_check_port);
}

NodeSession::~NodeSession() = default;

bool NodeSession::warm_standbys(const std::vector<worker::WorkerLaunch>& launches) {
  if (!standbys_) return false;
  standbys_->set_wanted(true);
  standbys_->fill(launches);
  return standbys_->size() > 0;
}

void NodeSession::begin_attempt(int restart_count, int world_size) {
  events_.set_attempt(restart_count);
  board_.attempt = restart_count;
  board_.world_size = world_size;
  if (standbys_) standbys_->set_wanted(restart_count < job_.max_restarts);  // a restart is left to take over
}

report::AttemptResult NodeSession::run_attempt(std::vector<worker::WorkerLaunch> launches,
                                               const supervise::AttemptCheck& check) {
  recovery_.rendezvous_done();
  board_.goodput.attempt_started(unix_now());
  report::AttemptResult result = supervisor_.run_attempt(std::move(launches), check);
  recovery_.attempt_ended(result.kind == Kind::kSucceeded);
  account_attempt(board_.goodput, result);
  return result;
}

void NodeSession::after_attempt(const report::AttemptResult& result, bool job_ends, bool membership) {
  if (auto why = persist_reason(result.kind, job_ends, stop_signals_.interrupted_by() != 0, membership))
    snapshots_.persist(*why);
}

}  // namespace ddp::launch::node
