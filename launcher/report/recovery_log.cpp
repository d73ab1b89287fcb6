

#include "launcher/console/notice.hpp"
#include "launcher/report/recovery_log.hpp"
#include "launcher/report/status_board.hpp"
#include <algorithm>
#include <cmath>

namespace ddp::launch::report {
namespace {

// Seconds to the microsecond: the log shows 0.245012, not 0.24501157299999998.
double us(double seconds) { return std::round(seconds * 1e6) / 1e6; }

}  // namespace

FailedAttempt failed_attempt(const AttemptResult& result, std::chrono::system_clock::time_point learned) {
  FailedAttempt f{learned, learned};
  if (result.root_cause && *result.root_cause < result.outcomes.size())
    f.failure_seen = result.outcomes[*result.root_cause].time;
  f.workers_stopped = f.failure_seen;
  for (const WorkerOutcome& o : result.outcomes) f.workers_stopped = std::max(f.workers_stopped, o.time);
  return f;
}

void RecoveryLog::begin(const FailedAttempt& failed) {
  if (timeline_) conclude(false);
  timeline_.emplace(failed.failure_seen);
  log_phase(RecoveryPhase::kFailureSeen, failed.failure_seen);
  log_phase(RecoveryPhase::kWorkersStopped, failed.workers_stopped);
}

void RecoveryLog::rendezvous_done() {
  if (timeline_) log_phase(RecoveryPhase::kRendezvousDone, std::chrono::system_clock::now());
}

void RecoveryLog::workers_started(const WorkersStarted& started) {
  if (!timeline_ || timeline_->has(RecoveryPhase::kWorkersStarted)) return;
  timeline_->set_started(started.workers, started.warm_workers);
  log_phase(RecoveryPhase::kWorkersStarted, started.time,
            {{"workers", static_cast<long long>(timeline_->workers())},
             {"warm_workers", static_cast<long long>(timeline_->warm_workers())},
             {"start", timeline_->start_kind()}});
}

void RecoveryLog::first_step(const std::optional<FirstStep>& step) {
  if (!timeline_ || !timeline_->has(RecoveryPhase::kWorkersStarted)) return;
  if (step) {
    if (step->joined) log_phase(RecoveryPhase::kJoined, *step->joined, {});
    if (step->restored) log_phase(RecoveryPhase::kRestored, *step->restored, {});
    log_phase(RecoveryPhase::kFirstStep, step->time,
              {{"rank", step->rank}, {"step", static_cast<long long>(step->step)}});
  }
  conclude(true);  // no step: no record within FirstStepWatch::kNoRecord, the line without it
}

void RecoveryLog::attempt_ended(bool succeeded) {
  if (timeline_) conclude(succeeded && timeline_->has(RecoveryPhase::kWorkersStarted));
}

void RecoveryLog::log_phase(RecoveryPhase phase, std::chrono::system_clock::time_point time,
                            std::vector<EventField> fields) {
  const double since = timeline_->mark(phase, time);
  fields.insert(fields.begin(), {{"phase", phase_name(phase)}, {"since_failure_s", us(since)}});
  events_.write("recovery", fields, timeline_->at(phase));
}

// The summary event (every duration so far), the console line if asked; the timeline ends.
void RecoveryLog::conclude(bool print_line) {
  const RecoveryTimeline::Durations d = timeline_->durations();
  std::vector<EventField> fields = {
      {"phase", "summary"}, {"stop_s", us(d.stop_s)}, {"store_s", us(d.store_s)}, {"start_s", us(d.start_s)}};
  if (d.first_step_s) fields.emplace_back("first_step_s", us(*d.first_step_s));
  if (d.joined_s) fields.emplace_back("joined_s", us(*d.joined_s));
  if (d.restored_s) fields.emplace_back("restored_s", us(*d.restored_s));
  if (d.step_s) fields.emplace_back("step_s", us(*d.step_s));
  fields.emplace_back("total_s", us(d.total_s));
  fields.emplace_back("workers", static_cast<long long>(timeline_->workers()));
  fields.emplace_back("warm_workers", static_cast<long long>(timeline_->warm_workers()));
  fields.emplace_back("start", timeline_->start_kind());
  fields.emplace_back("recovered", print_line);
  events_.write("recovery", fields);
  if (board_) {
    board_->recovery["stop"].observe(d.stop_s);
    board_->recovery["store"].observe(d.store_s);
    board_->recovery["start"].observe(d.start_s);
    if (d.first_step_s) board_->recovery["first_step"].observe(*d.first_step_s);
    if (d.joined_s) board_->recovery["joined"].observe(*d.joined_s);
    if (d.restored_s) board_->recovery["restored"].observe(*d.restored_s);
    if (d.step_s) board_->recovery["step"].observe(*d.step_s);
    board_->recovery["total"].observe(d.total_s);
  }
  if (print_line) console::launcher_notice(recovery_line(*timeline_));
  timeline_.reset();
}

}  // namespace ddp::launch::report
