// StragglerDetector: synthetic record snapshots, one per simulated tick, through the progress
// sampler as the progress monitor feeds them (no processes).
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "launcher/progress/progress_sampler.hpp"
#include "launcher/progress/straggler_detector.hpp"

using namespace ddp::launch;
using namespace ddp::launch::progress;
namespace progress = ddp::progress;

namespace {

constexpr double kTick = 0.5;

ddp::progress::Record record(uint64_t step, double step_time_s, bool waiting) {
  ddp::progress::Record r{};
  r.magic = ddp::progress::kMagic;
  r.version = ddp::progress::kVersion;
  r.step = step;
  r.step_time_ns = static_cast<uint64_t>(step_time_s * 1e9);
  r.seq_entered = step + (waiting ? 1 : 0);
  r.seq_completed = step;
  return r;
}

std::vector<ProgressSampler::Rank> ranks(int n) {
  std::vector<ProgressSampler::Rank> out;
  for (int r = 0; r < n; ++r) out.push_back({r, 4700 + r});
  return out;
}

// The sampler and the detector of n live ranks, one tick at a time.
struct SampledDetector {
  SampledDetector(int n, double threshold) : sampler(ranks(n), 100), detector(threshold) {}
  std::vector<StragglerDetector::Flag> observe(double now_s,
                                               const std::vector<std::optional<ddp::progress::Record>>& records) {
    sampler.observe(now_s, records, std::vector<bool>(records.size(), true));
    return detector.observe(now_s, sampler);
  }
  std::optional<double> step_time(size_t i) const { return StragglerDetector::own_step_time(sampler.samples()[i]); }
  ProgressSampler sampler;
  StragglerDetector detector;
};

// Runs `seconds` of ticks; rank i completes a step every period(i, k) seconds (k: its
// step count) and is seen waiting in a collective when waiting(i, tick) says so.
template <class Period, class Waiting>
std::vector<std::string> simulate(SampledDetector& watch, int n, double seconds, Period period, Waiting waiting) {
  std::vector<uint64_t> step(n, 0);
  std::vector<double> next(n), last(n, 0);
  for (int i = 0; i < n; ++i) next[i] = period(i, 0);
  std::vector<std::string> notices;
  int tick = 0;
  for (double t = kTick; t <= seconds; t += kTick, ++tick) {
    std::vector<std::optional<ddp::progress::Record>> records;
    for (int i = 0; i < n; ++i) {
      while (next[i] <= t) {
        last[i] = next[i];
        next[i] += period(i, ++step[i]);
      }
      records.push_back(record(step[i], 100 + last[i], waiting(i, tick)));
    }
    for (auto& f : watch.observe(100 + t, records)) notices.push_back(f.notice);
  }
  return notices;
}

auto never_waits = [](int, int) { return false; };

}  // namespace

TEST_CASE("straggler: equal ranks, and ranks noisy within the threshold, are never flagged") {
  SampledDetector equal(4, 2.0);
  CHECK(simulate(
            equal, 4, 120, [](int, uint64_t) { return 0.2; }, never_waits)
            .empty());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> jitter(0.6, 1.6);  // at most 1.6 / 0.6 < 2.7 per step, ~1.1x on average
  SampledDetector noisy(4, 2.0);
  CHECK(simulate(
            noisy, 4, 120, [&](int, uint64_t) { return 0.2 * jitter(rng); }, never_waits)
            .empty());
  // Steps slower than a tick: few samples per step, still no flag.
  SampledDetector slow(2, 2.0);
  CHECK(simulate(
            slow, 2, 120, [](int i, uint64_t) { return i == 0 ? 2.0 : 2.6; }, never_waits)
            .empty());
}

TEST_CASE("straggler: the slow rank is flagged once, within 60 s, and no other rank") {
  SampledDetector watch(4, 2.0);
  auto notices = simulate(
      watch, 4, 60, [](int i, uint64_t) { return i == 2 ? 0.5 : 0.1; }, never_waits);
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Catch::StartsWith("straggler: rank 2 (pid 4702) takes 0.5 s per step, 5.0x the job "
                                           "median of 0.1 s (--straggler-threshold 2)"));
  CHECK(watch.step_time(0));
  // With two ranks the median is the faster one's.
  SampledDetector two(2, 2.0);
  auto pair = simulate(
      two, 2, 60, [](int i, uint64_t) { return i == 1 ? 0.3 : 0.1; }, never_waits);
  REQUIRE(pair.size() == 1);
  CHECK_THAT(pair[0], Catch::StartsWith("straggler: rank 1 "));
}

TEST_CASE("straggler: in a synchronous job the rank the others wait for is flagged") {
  // Every rank steps at the slow one's pace; the fast ones are seen waiting 4 ticks in 5.
  SampledDetector watch(3, 2.0);
  auto notices = simulate(
      watch, 3, 60, [](int, uint64_t) { return 0.25; }, [](int i, int tick) { return i != 1 && tick % 5 != 0; });
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Catch::StartsWith("straggler: rank 1 (pid 4701)"));
  // The same job where nobody waits more than anybody else: nothing.
  SampledDetector even(3, 2.0);
  CHECK(simulate(
            even, 3, 60, [](int, uint64_t) { return 0.25; }, [](int, int tick) { return tick % 2 == 0; })
            .empty());
}

TEST_CASE("straggler: a rank below the threshold, or one that stops stepping, is not flagged") {
  SampledDetector below(3, 2.0);
  CHECK(simulate(
            below, 3, 60, [](int i, uint64_t) { return i == 0 ? 0.19 : 0.1; }, never_waits)
            .empty());
  SampledDetector stuck(2, 2.0);  // rank 1 stops after 5 steps: a hang, not a straggler
  CHECK(simulate(
            stuck, 2, 60, [](int i, uint64_t k) { return i == 1 && k >= 5 ? 1e9 : 0.1; }, never_waits)
            .empty());
  // Both stop after 3 s of steps, rank 1 stopped outside a collective, rank 0 waiting for it.
  SampledDetector hung(2, 2.0);
  CHECK(simulate(
            hung, 2, 60, [](int, uint64_t k) { return k >= 30 ? 1e9 : 0.1; },
            [](int i, int tick) { return i == 0 && tick >= 6; })
            .empty());
}

TEST_CASE("straggler: a legitimate pause judges nobody while it is in the window") {
  // Rank 0 saves a checkpoint inside a pause for 8 s every 12 s; rank 1 waits for it in a
  // collective meanwhile. Without the pause rule rank 0 (slow steps, rarely waiting) would
  // be flagged against rank 1 (always waiting, so a step time near 0).
  SampledDetector watch(2, 2.0);
  uint64_t step = 0;
  double last_step = 0;
  std::vector<std::string> notices;
  for (double t = kTick; t <= 90; t += kTick) {
    const bool saving = std::fmod(t, 12.0) < 8.0;
    if (!saving) {
      ++step;
      last_step = t;
    }
    auto r0 = record(step, 100 + last_step, false);
    r0.paused = saving ? 1 : 0;
    auto r1 = record(step, 100 + last_step, saving);
    for (auto& f : watch.observe(100 + t, {r0, r1})) notices.push_back(f.notice);
  }
  CHECK(notices.empty());
  // After the last pause the watch judges again: rank 0 becomes the rank rank 1 waits for.
  int tick = 0;
  for (double t = 90 + kTick; t <= 150; t += kTick, ++tick) {
    ++step;
    auto r0 = record(step, 100 + t, false);
    auto r1 = record(step, 100 + t, tick % 5 != 0);
    for (auto& f : watch.observe(100 + t, {r0, r1})) notices.push_back(f.notice);
  }
  REQUIRE(notices.size() == 1);
  CHECK_THAT(notices[0], Catch::StartsWith("straggler: rank 0 (pid 4700)"));
}
