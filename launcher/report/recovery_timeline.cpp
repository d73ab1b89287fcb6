#include "launcher/report/recovery_timeline.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ddp::launch::report {
namespace {

double seconds(RecoveryTimeline::Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

const char* phase_name(RecoveryPhase phase) {
  switch (phase) {
    case RecoveryPhase::kFailureSeen: return "failure_seen";
    case RecoveryPhase::kWorkersStopped: return "workers_stopped";
    case RecoveryPhase::kRendezvousDone: return "rendezvous_done";
    case RecoveryPhase::kWorkersStarted: return "workers_started";
    case RecoveryPhase::kJoined: return "joined";
    case RecoveryPhase::kRestored: return "restored";
    case RecoveryPhase::kFirstStep: return "first_step";
  }
  return "?";
}

RecoveryTimeline::RecoveryTimeline(Clock::time_point failure_seen) { times_[0] = failure_seen; }

RecoveryTimeline::Clock::time_point RecoveryTimeline::at(RecoveryPhase phase) const {
  for (size_t i = index(phase) + 1; i-- > 0;)
    if (times_[i]) return *times_[i];
  return *times_[0];  // failure_seen is always marked
}

double RecoveryTimeline::mark(RecoveryPhase phase, Clock::time_point t) {
  const size_t i = index(phase);
  if (i > 0) t = std::max(t, at(static_cast<RecoveryPhase>(i - 1)));
  times_[i] = t;
  return seconds(t - *times_[0]);
}

void RecoveryTimeline::set_started(size_t workers, size_t warm_workers) {
  workers_ = workers;
  warm_workers_ = std::min(warm_workers, workers);
}

std::string RecoveryTimeline::start_kind() const {
  if (warm_workers_ == 0) return "cold";
  if (warm_workers_ == workers_) return "warm";
  return fmt::format("{}/{} warm", warm_workers_, workers_);
}

RecoveryTimeline::Durations RecoveryTimeline::durations() const {
  Durations d;
  d.stop_s = seconds(at(RecoveryPhase::kWorkersStopped) - at(RecoveryPhase::kFailureSeen));
  d.store_s = seconds(at(RecoveryPhase::kRendezvousDone) - at(RecoveryPhase::kWorkersStopped));
  d.start_s = seconds(at(RecoveryPhase::kWorkersStarted) - at(RecoveryPhase::kRendezvousDone));
  d.total_s = d.stop_s + d.store_s + d.start_s;
  if (has(RecoveryPhase::kFirstStep)) {
    d.first_step_s = seconds(at(RecoveryPhase::kFirstStep) - at(RecoveryPhase::kWorkersStarted));
    d.total_s += *d.first_step_s;
    if (has(RecoveryPhase::kJoined))
      d.joined_s = seconds(at(RecoveryPhase::kJoined) - at(RecoveryPhase::kWorkersStarted));
    if (has(RecoveryPhase::kRestored))
      d.restored_s = seconds(at(RecoveryPhase::kRestored) - at(RecoveryPhase::kJoined));
    if (d.joined_s || d.restored_s) d.step_s = seconds(at(RecoveryPhase::kFirstStep) - at(RecoveryPhase::kRestored));
  }
  return d;
}

std::string recovery_line(const RecoveryTimeline& timeline) {
  const RecoveryTimeline::Durations d = timeline.durations();
  std::string first_step;
  if (d.first_step_s) {
    first_step = fmt::format(", first step {:.2f}", *d.first_step_s);
    if (d.step_s) {
      first_step += ":";
      if (d.joined_s) first_step += fmt::format(" joined {:.2f},", *d.joined_s);
      if (d.restored_s) first_step += fmt::format(" restored {:.2f},", *d.restored_s);
      first_step += fmt::format(" step {:.2f}", *d.step_s);
    }
  }
  return fmt::format("recovered in {:.2f} s (stop {:.2f}, start {:.2f} {}, store {:.2f}{})", d.total_s, d.stop_s,
                     d.start_s, timeline.start_kind(), d.store_s, first_step);
}

}  // namespace ddp::launch::report
