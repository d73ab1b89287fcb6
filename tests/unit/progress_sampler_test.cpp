// ProgressSampler and HangDetector: synthetic records and a synthetic clock (no processes).
#include <catch2/catch.hpp>

#include "launcher/progress/hang_detector.hpp"
#include "launcher/progress/progress_sampler.hpp"

using namespace ddp::launch;
using namespace ddp::launch::progress;
namespace progress = ddp::progress;

namespace {

constexpr double kStart = 1000;  // the synthetic clock, in seconds

ddp::progress::Record record(uint64_t updates, uint64_t step = 0, double step_time_s = 0) {
  ddp::progress::Record r{};
  r.magic = ddp::progress::kMagic;
  r.version = ddp::progress::kVersion;
  r.updates = updates;
  r.step = step;
  r.step_time_ns = static_cast<uint64_t>(step_time_s * 1e9);
  return r;
}

ProgressSampler sampler_of(int n) {
  std::vector<ProgressSampler::Rank> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back({r, 4700 + r});
  return ProgressSampler(ranks, kStart);
}

}  // namespace

TEST_CASE("sampler: idle time runs from the record's last change, and from the start for a rank never fed") {
  auto s = sampler_of(2);
  s.observe(kStart + 1, {record(1), std::nullopt}, {true, true});
  s.observe(kStart + 5, {record(1), std::nullopt}, {true, true});
  CHECK(s.samples()[0].idle_s == Approx(4));
  CHECK(s.samples()[0].ever_fed);
  CHECK(s.samples()[1].idle_s == Approx(5));
  CHECK_FALSE(s.samples()[1].ever_fed);
  s.observe(kStart + 6, {record(2), std::nullopt}, {true, false});
  CHECK(s.samples()[0].idle_s == 0);
  CHECK_FALSE(s.samples()[1].live);
  CHECK_FALSE(s.samples()[1].record);
}

TEST_CASE("sampler: a pause counts until its deadline, and the sampler remembers when it was last seen") {
  auto s = sampler_of(1);
  auto r = record(1);
  r.paused = 1;
  r.pause_deadline_ns = static_cast<uint64_t>((kStart + 10) * 1e9);
  s.observe(kStart + 2, {r}, {true});
  CHECK(s.samples()[0].paused);
  CHECK(s.last_pause_s() == Approx(kStart + 2));
  s.observe(kStart + 11, {r}, {true});  // past its deadline: no longer a legitimate pause
  CHECK_FALSE(s.samples()[0].paused);
  CHECK(s.last_pause_s() == Approx(kStart + 2));
}

TEST_CASE("sampler: the step time over the window for fast steps, over the last steps for slow ones") {
  auto fast = sampler_of(1);
  for (int t = 1; t <= 60; ++t) fast.observe(kStart + t, {record(t, 10 * t, kStart + t)}, {true});  // 0.1 s a step
  REQUIRE(fast.samples()[0].step_s);
  CHECK(*fast.samples()[0].step_s == Approx(0.1));
  CHECK(fast.samples()[0].window_s <= ProgressSampler::kWindowS + 1);
  CHECK(fast.samples()[0].steps_measured >= 190);  // ~20 s of steps, not all 60 s

  auto slow = sampler_of(1);  // a step every 50 s, observed twice a second
  uint64_t step = 0;
  for (double t = 0.5; t <= 500; t += 0.5) {
    if (static_cast<int>(t * 2) % 100 == 0) ++step;
    slow.observe(kStart + t, {record(step + 1, step, kStart + 50.0 * step)}, {true});
  }
  REQUIRE(slow.samples()[0].step_s);
  CHECK(*slow.samples()[0].step_s == Approx(50));
  CHECK(slow.samples()[0].steps_measured == ProgressSampler::kRecentSteps);
  CHECK(slow.samples()[0].since_step_s == Approx(0).margin(0.01));
}

TEST_CASE("sampler: no step time before two steps, after an exit, or across a record that started over") {
  auto s = sampler_of(1);
  s.observe(kStart + 1, {record(1, 1, kStart + 1)}, {true});
  CHECK_FALSE(s.samples()[0].step_s);
  s.observe(kStart + 2, {record(2, 3, kStart + 2)}, {true});
  REQUIRE(s.samples()[0].step_s);
  CHECK(*s.samples()[0].step_s == Approx(0.5));
  s.observe(kStart + 3, {record(3, 1, kStart + 3)}, {true});  // a new record from step 1
  CHECK_FALSE(s.samples()[0].step_s);
  s.observe(kStart + 4, {record(4, 2, kStart + 4)}, {false});
  CHECK_FALSE(s.samples()[0].step_s);
}

TEST_CASE("hang detector: the auto limit follows the slowest rank's step time from the sampler") {
  auto s = sampler_of(2);
  HangDetector auto_limit(-1, 2, kStart);
  CHECK(auto_limit.limit(s) == AutoHangLimit::kBeforeFirstStepS);
  for (int t = 1; t <= 10; ++t)
    s.observe(kStart + t, {record(t, t, kStart + t), record(t, t / 2, kStart + t)}, {true, true});
  CHECK(auto_limit.limit(s) == Approx(AutoHangLimit::kFloorS));  // 10 x 2 s < the floor
  HangDetector fixed(30, 2, kStart);
  CHECK(fixed.limit(s) == 30);
}

TEST_CASE("hang detector: a verdict when every live rank is idle for the limit, held off by a pause") {
  auto s = sampler_of(2);
  HangDetector d(30, 2, kStart);
  auto r0 = record(5, 3, kStart), r1 = record(5, 3, kStart);
  r0.seq_entered = 5;
  r0.seq_completed = 4;  // rank 0 waits in #5; rank 1 never entered it
  r1.seq_entered = r1.seq_completed = 4;
  s.observe(kStart + 1, {r0, r1}, {true, true});
  CHECK_FALSE(d.observe(kStart + 1, s));
  s.observe(kStart + 20, {r0, r1}, {true, true});
  CHECK_FALSE(d.observe(kStart + 20, s));
  auto paused = r1;
  paused.paused = 1;
  s.observe(kStart + 25, {r0, paused}, {true, true});  // a pause: the job's clock is held
  CHECK_FALSE(d.observe(kStart + 25, s));
  s.observe(kStart + 40, {r0, r1}, {true, true});
  CHECK_FALSE(d.observe(kStart + 40, s));  // 15 s since the pause
  s.observe(kStart + 56, {r0, r1}, {true, true});
  auto v = d.observe(kStart + 56, s);
  REQUIRE(v);
  CHECK(v->culprit == 1);
  CHECK_THAT(v->summary, Catch::StartsWith("hang: no progress for 31 s; rank 1 (pid 4701) at step 3"));
}

TEST_CASE("hang detector: workers that feed nothing are judged by their signs of life") {
  auto s = sampler_of(2);
  HangDetector d(30, 2, kStart);
  s.observe(kStart + 10, {std::nullopt, std::nullopt}, {true, true});
  REQUIRE(HangDetector::wants_signs_of_life(s));
  CHECK_FALSE(d.observe(kStart + 10, s, {{10, 5}, {0, 0}}));  // rank 0 printed and computed
  s.observe(kStart + 35, {std::nullopt, std::nullopt}, {true, true});
  CHECK_FALSE(d.observe(kStart + 35, s, {{10, 5}, {0, 0}}));  // rank 0 silent for 25 s only
  s.observe(kStart + 41, {std::nullopt, std::nullopt}, {true, true});
  auto v = d.observe(kStart + 41, s, {{10, 5}, {0, 0}});
  REQUIRE(v);
  CHECK(v->culprit == 1);  // silent since the start: the longest
  CHECK_THAT(v->summary, Catch::StartsWith("hang: rank 1 (pid 4701) fed no progress record; no output and no CPU "
                                           "time for 41 s; rank 0 silent too"));
}
