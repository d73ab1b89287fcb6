// Each restart's recovery timeline as it happens (recovery_timeline.hpp): a `recovery` event
// per phase in events.jsonl (a crash mid-recovery leaves a partial timeline), then a `summary`
// one and the console line `ddp-launch: recovered in ...` at the new attempt's first step. The
// agents call begin() once they restart and rendezvous_done() right before the new attempt's
// workers start; the Supervisor calls the observer hooks; attempt_ended() follows run_attempt.
// Borrows the event log; single-threaded; never throws (docs/events.md "Recovery").
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "launcher/report/attempt_observer.hpp"
#include "launcher/report/attempt_result.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/report/recovery_timeline.hpp"

namespace ddp::launch::report {

struct StatusBoard;

// When a failed attempt's failure was seen and when its last worker was gone.
struct FailedAttempt {
  std::chrono::system_clock::time_point failure_seen;
  std::chrono::system_clock::time_point workers_stopped;
};
// A local root cause: its exit; otherwise (stopped for a failure elsewhere, or this node's
// workers had finished) `learned`, when this node read of the failure. workers_stopped: the
// latest worker exit (never before failure_seen).
FailedAttempt failed_attempt(const AttemptResult& result, std::chrono::system_clock::time_point learned);

class RecoveryLog : public AttemptObserver {
 public:
  // board: where each concluded timeline's durations go, by phase (null: nowhere); borrowed.
  explicit RecoveryLog(EventLog& events, StatusBoard* board = nullptr) : events_(events), board_(board) {}
  RecoveryLog(const RecoveryLog&) = delete;
  RecoveryLog& operator=(const RecoveryLog&) = delete;

  // A restart follows `failed`: logs failure_seen and workers_stopped. Call after the
  // restart event (the log's attempt is the new attempt's).
  void begin(const FailedAttempt& failed);
  // The new attempt is planned (the next round joined); its workers start next.
  void rendezvous_done();
  // The attempt that begin() recovers into ended. A timeline still without its first step is
  // summarised; the console line is printed only when the attempt succeeded (a failed one
  // did not recover).
  void attempt_ended(bool succeeded);

  void workers_started(const WorkersStarted& started) override;
  void first_step(const std::optional<FirstStep>& step) override;

 private:
  void log_phase(RecoveryPhase phase, std::chrono::system_clock::time_point time, std::vector<EventField> fields = {});
  void conclude(bool print_line);

  EventLog& events_;
  StatusBoard* board_ = nullptr;
  std::optional<RecoveryTimeline> timeline_;  // between begin() and the summary
};

}  // namespace ddp::launch::report
