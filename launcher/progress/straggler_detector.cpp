#include "launcher/progress/straggler_detector.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace ddp::launch::progress {

StragglerDetector::StragglerDetector(double threshold) : threshold_(threshold) {}

std::optional<double> StragglerDetector::own_step_time(const RankSample& s) {
  if (!s.step_s || s.window_samples < 2 || s.window_s < kMinSpanS || s.steps_measured < kMinSteps) return std::nullopt;
  if (s.since_step_s > std::max(kStallS, 3 * *s.step_s)) return std::nullopt;
  return *s.step_s * static_cast<double>(s.busy_samples) / static_cast<double>(s.window_samples);
}

std::vector<StragglerDetector::Flag> StragglerDetector::observe(double now_s, const ProgressSampler& sampler) {
  const std::vector<RankSample>& ranks = sampler.samples();
  flagged_.resize(ranks.size(), false);
  std::vector<Flag> notices;
  const auto pause = sampler.last_pause_s();
  if (pause && now_s - *pause <= ProgressSampler::kWindowS) return notices;
  std::vector<double> times;
  std::vector<std::optional<double>> own(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i)
    if ((own[i] = own_step_time(ranks[i]))) times.push_back(*own[i]);
  if (times.size() < 2) return notices;
  std::sort(times.begin(), times.end());
  const double median = times[(times.size() - 1) / 2];  // the lower median: with 2 ranks, the faster
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (flagged_[i] || !own[i]) continue;
    const double ratio = median > 0 ? *own[i] / median : std::numeric_limits<double>::infinity();
    if (ranks[i].busy_samples < kMinBusy || ratio < threshold_) continue;
    flagged_[i] = true;
    notices.push_back({ranks[i].rank, ranks[i].pid, *own[i], median,
                       fmt::format("straggler: rank {} (pid {}) takes {:.3g} s per step, {:.1f}x the job median of "
                                   "{:.3g} s (--straggler-threshold {:g}); reporting only",
                                   ranks[i].rank, ranks[i].pid, *own[i], ratio, median, threshold_)});
  }
  return notices;
}

}  // namespace ddp::launch::progress
