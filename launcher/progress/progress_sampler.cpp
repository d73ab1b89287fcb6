#include "launcher/progress/progress_sampler.hpp"

#include <algorithm>

namespace ddp::launch::progress {

ProgressSampler::ProgressSampler(std::vector<Rank> ranks, double start_s)
    : samples_(ranks.size()),
      ticks_(ranks.size()),
      changes_(ranks.size()),
      last_updates_(ranks.size(), 0),
      last_change_s_(ranks.size(), start_s) {
  for (size_t i = 0; i < ranks.size(); ++i) {
    samples_[i].rank = ranks[i].rank;
    samples_[i].pid = ranks[i].pid;
  }
}

const std::vector<RankSample>& ProgressSampler::observe(
    double now_s, const std::vector<std::optional<ddp::progress::Record>>& records, const std::vector<bool>& live) {
  for (size_t i = 0; i < samples_.size(); ++i) {
    RankSample& s = samples_[i];
    s.live = i < live.size() && live[i];
    s.record = s.live && i < records.size() ? records[i] : std::nullopt;
    const ddp::progress::Record* r = s.record ? &*s.record : nullptr;
    if (r && r->updates != last_updates_[i]) {
      last_updates_[i] = r->updates;
      last_change_s_[i] = now_s;
    }
    s.ever_fed = s.ever_fed || r;
    s.idle_s = now_s - last_change_s_[i];
    s.paused =
        r && r->paused > 0 && (r->pause_deadline_ns == 0 || now_s * 1e9 < static_cast<double>(r->pause_deadline_ns));
    if (s.paused) last_pause_s_ = now_s;
    if (r && r->step_time_ns != 0) {
      add(i, now_s, *r);
    } else {  // no step yet, or gone: nothing to time
      ticks_[i].clear();
      changes_[i].clear();
    }
    summarise(i, now_s);
  }
  return samples_;
}

void ProgressSampler::add(size_t i, double now_s, const ddp::progress::Record& r) {
  std::deque<Tick>& ticks = ticks_[i];
  std::deque<StepChange>& changes = changes_[i];
  if (!changes.empty() && r.step < changes.back().step) {  // the record started over
    ticks.clear();
    changes.clear();
  }
  ticks.push_back({now_s, r.seq_entered > r.seq_completed});
  while (ticks.size() > 2 && now_s - ticks.front().t > kWindowS) ticks.pop_front();
  if (changes.empty() || r.step != changes.back().step) changes.push_back({now_s, r.step, r.step_time_ns});
  while (changes.size() > kRecentSteps + 1 && now_s - changes.front().t > kWindowS) changes.pop_front();
}

void ProgressSampler::summarise(size_t i, double now_s) {
  RankSample& s = samples_[i];
  const std::deque<Tick>& ticks = ticks_[i];
  const std::deque<StepChange>& changes = changes_[i];
  s.window_samples = ticks.size();
  s.busy_samples =
      static_cast<size_t>(std::count_if(ticks.begin(), ticks.end(), [](const Tick& t) { return !t.waiting; }));
  s.window_s = ticks.empty() ? 0 : ticks.back().t - ticks.front().t;
  s.since_step_s = changes.empty() ? 0 : now_s - changes.back().t;
  s.step_s.reset();
  s.steps_measured = 0;
  if (changes.size() < 2 || changes.back().step_time_ns <= changes.front().step_time_ns) return;
  s.steps_measured = changes.back().step - changes.front().step;
  s.step_s = static_cast<double>(changes.back().step_time_ns - changes.front().step_time_ns) / 1e9 /
             static_cast<double>(s.steps_measured);
}

}  // namespace ddp::launch::progress
