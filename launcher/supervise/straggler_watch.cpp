#include "launcher/supervise/straggler_watch.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace ddp::launch {

StragglerWatch::StragglerWatch(std::vector<Rank> ranks, double threshold)
    : ranks_(std::move(ranks)), threshold_(threshold), samples_(ranks_.size()), flagged_(ranks_.size(), false) {}

std::optional<double> StragglerWatch::step_time(size_t i) const {
  const auto& s = samples_[i];
  if (s.size() < 2 || s.back().t - s.front().t < kMinSpanS) return std::nullopt;
  const uint64_t steps = s.back().step - s.front().step;
  if (steps < kMinSteps || s.back().step_time_ns <= s.front().step_time_ns) return std::nullopt;
  const double per_step = static_cast<double>(s.back().step_time_ns - s.front().step_time_ns) / 1e9 / steps;
  if (s.back().t - s.back().t_step > std::max(kStallS, 3 * per_step)) return std::nullopt;
  const auto busy = std::count_if(s.begin(), s.end(), [](const Sample& x) { return !x.waiting; });
  return per_step * static_cast<double>(busy) / static_cast<double>(s.size());
}

std::vector<StragglerWatch::Flag> StragglerWatch::observe(double now_s,
                                                 const std::vector<std::optional<progress::Record>>& records) {
  for (size_t i = 0; i < ranks_.size(); ++i) {
    auto& s = samples_[i];
    const auto& r = i < records.size() ? records[i] : std::nullopt;
    if (!r || r->step_time_ns == 0) {  // no step yet, never fed, or exited: no straggler
      s.clear();
      continue;
    }
    if (!s.empty() && r->step < s.back().step) s.clear();  // a record restarted: start over
    const double t_step = !s.empty() && s.back().step == r->step ? s.back().t_step : now_s;
    s.push_back({now_s, t_step, r->step, r->step_time_ns, r->seq_entered > r->seq_completed});
    while (s.size() > 2 && now_s - s.front().t > kWindowS) s.pop_front();
    if (r->paused > 0) last_pause_s_ = now_s;
  }
  std::vector<Flag> notices;
  if (last_pause_s_ && now_s - *last_pause_s_ <= kWindowS) return notices;
  std::vector<double> times;
  std::vector<std::optional<double>> per_rank(ranks_.size());
  for (size_t i = 0; i < ranks_.size(); ++i)
    if ((per_rank[i] = step_time(i))) times.push_back(*per_rank[i]);
  if (times.size() < 2) return notices;
  std::sort(times.begin(), times.end());
  const double median = times[(times.size() - 1) / 2];  // the lower median: with 2 ranks, the faster
  for (size_t i = 0; i < ranks_.size(); ++i) {
    if (flagged_[i] || !per_rank[i]) continue;
    const auto busy = std::count_if(samples_[i].begin(), samples_[i].end(), [](const Sample& x) { return !x.waiting; });
    const double ratio = median > 0 ? *per_rank[i] / median : std::numeric_limits<double>::infinity();
    if (busy < static_cast<long>(kMinBusy) || ratio < threshold_) continue;
    flagged_[i] = true;
    notices.push_back({ranks_[i].rank, ranks_[i].pid, *per_rank[i], median,
                       fmt::format("straggler: rank {} (pid {}) takes {:.3g} s per step, {:.1f}x the job median of "
                                   "{:.3g} s (--straggler-threshold {:g}); reporting only",
                                   ranks_[i].rank, ranks_[i].pid, *per_rank[i], ratio, median, threshold_)});
  }
  return notices;
}

}  // namespace ddp::launch
