// The recovery timeline of one restart: when each phase happened, from the failure to the new
// attempt's first step, and what follows from it (each phase's duration, the console line
// `recovered in ...`). Pure: the caller passes every time; single-threaded. Phases are marked in
// order; a time earlier than the previous phase's counts as that time, so no duration is negative.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace ddp::launch::report {

// In the order they happen (docs/events.md "Recovery").
enum class RecoveryPhase {
  kFailureSeen,     // the launcher saw the root failure (a remote one: this node learned of it)
  kWorkersStopped,  // the failed attempt's last worker is gone
  kRendezvousDone,  // the next round joined (multi-node), the new attempt's plan ready
  kWorkersStarted,  // the new attempt's workers were spawned
  kJoined,          // every rank's init_process_group returned (as far as the records tell)
  kRestored,        // every rank restored its training state (a snapshot, a checkpoint)
  kFirstStep,       // some rank completed its first step in the new attempt
};
inline constexpr size_t kRecoveryPhases = 7;

// "failure_seen", "workers_stopped", "rendezvous_done", "workers_started", "joined", "restored",
// "first_step".
const char* phase_name(RecoveryPhase phase);

class RecoveryTimeline {
 public:
  using Clock = std::chrono::system_clock;

  // Each phase's share; first_step_s is nullopt until (unless) the first step was marked, and
  // its parts joined_s and restored_s unless those phases were (the workers told them).
  struct Durations {
    double stop_s = 0;                   // failure_seen -> workers_stopped
    double store_s = 0;                  // workers_stopped -> rendezvous_done (the workers' store, the rendezvous)
    double start_s = 0;                  // rendezvous_done -> workers_started
    std::optional<double> first_step_s;  // workers_started -> first_step, made of:
    std::optional<double> joined_s;      //   workers_started -> joined (program start, init_process_group)
    std::optional<double> restored_s;    //   joined (or workers_started) -> restored
    std::optional<double> step_s;        //   the last of those -> first_step (with joined_s or restored_s)
    double total_s = 0;                  // stop_s + store_s + start_s + first_step_s
  };

  explicit RecoveryTimeline(Clock::time_point failure_seen);

  // Marks `phase` at t, or at the latest earlier phase's time if t is before it; returns the
  // seconds since failure_seen. An unmarked earlier phase counts as the one before it.
  double mark(RecoveryPhase phase, Clock::time_point t);
  bool has(RecoveryPhase phase) const { return times_[index(phase)].has_value(); }
  // The time `phase` was marked at (an unmarked one: its latest marked predecessor's).
  Clock::time_point at(RecoveryPhase phase) const;

  // How the new attempt's workers started: warm_workers of them from pre-warmed standbys.
  void set_started(size_t workers, size_t warm_workers);
  size_t workers() const { return workers_; }
  size_t warm_workers() const { return warm_workers_; }
  // "warm" (every worker), "cold" (none), or "K/N warm".
  std::string start_kind() const;

  Durations durations() const;

 private:
  static size_t index(RecoveryPhase p) { return static_cast<size_t>(p); }
  std::array<std::optional<Clock::time_point>, kRecoveryPhases> times_;
  size_t workers_ = 0;
  size_t warm_workers_ = 0;
};

// "recovered in 0.21 s (stop 0.01, start 0.00 warm, store 0.02, first step 0.18)"; with the
// first step's parts when the workers told them: "first step 0.18: joined 0.05, restored 0.10,
// step 0.03" (those marked); without "first step ..." when the first step was not marked.
// Seconds with two decimals.
std::string recovery_line(const RecoveryTimeline& timeline);

}  // namespace ddp::launch::report
