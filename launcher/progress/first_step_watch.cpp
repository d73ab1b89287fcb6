#include "launcher/progress/first_step_watch.hpp"

#include <algorithm>

namespace ddp::launch::progress {
namespace {

using SteadyClock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux: the records' clock

// A record's CLOCK_MONOTONIC time as wall-clock time (0: not recorded; now instead).
std::chrono::system_clock::time_point wall_time(uint64_t monotonic_ns) {
  const auto now = std::chrono::system_clock::now();
  if (monotonic_ns == 0) return now;
  const auto mono_now = SteadyClock::now().time_since_epoch();
  const auto ago = mono_now - std::chrono::nanoseconds(monotonic_ns);
  return now -
         std::chrono::duration_cast<std::chrono::system_clock::duration>(std::max(ago, SteadyClock::duration::zero()));
}

}  // namespace

FirstStepWatch::FirstStepWatch(std::vector<int> ranks, SteadyClock::time_point started)
    : ranks_(std::move(ranks)), started_(started) {}

FirstStepWatch::Answer FirstStepWatch::observe(const std::vector<std::optional<ddp::progress::Record>>& records,
                                               SteadyClock::time_point now, bool end_of_attempt) {
  std::optional<report::FirstStep> first;   // the earliest completed step among the ranks
  uint64_t joined_ns = 0, restored_ns = 0;  // the latest among the ranks
  for (size_t i = 0; i < records.size() && i < ranks_.size(); ++i) {
    if (!records[i]) continue;
    fed_ = true;
    joined_ns = std::max(joined_ns, records[i]->joined_time_ns);
    restored_ns = std::max(restored_ns, records[i]->restored_time_ns);
    if (records[i]->step == 0) continue;
    const report::FirstStep step{wall_time(records[i]->step_time_ns), ranks_[i], records[i]->step, {}, {}};
    if (!first || step.time < first->time) first = step;
  }
  if (first) {
    if (joined_ns != 0) first->joined = wall_time(joined_ns);
    if (restored_ns != 0) first->restored = wall_time(restored_ns);
    return {Seen::kStep, *first};
  }
  if (!end_of_attempt && !fed_ && now - started_ >= kNoRecord) return {Seen::kNoRecord, {}};
  return {};
}

}  // namespace ddp::launch::progress
