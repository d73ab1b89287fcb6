// The goodput ledger: every second of a node's wall time is goodput or one kind of badput, and
// they add up; a failed attempt's steps wait for the next attempt's resume point; a record that
// lies is ignored and counted; the totals only grow. Times are Unix seconds; the records' own
// times are given with a 0 offset (their nanoseconds are Unix nanoseconds).
#include <catch2/catch.hpp>

#include <optional>
#include <vector>

#include "launcher/report/goodput_ledger.hpp"

using ddp::launch::report::Badput;
using ddp::launch::report::GoodputLedger;
using ddp::launch::report::GoodputTotals;
using ddp::progress::Record;
using Ending = GoodputLedger::Ending;
using Approx = Catch::Detail::Approx;

namespace {

uint64_t ns(double unix_s) { return static_cast<uint64_t>(unix_s * 1e9 + 0.5); }

// A rank's record at `step`, completed at step_t (0 steps: not stepped yet).
Record record(uint64_t step, double step_t, double saving_s = 0, uint64_t resumed_from = 0, double joined = 0,
              double restored = 0) {
  Record r{};
  r.magic = ddp::progress::kMagic;
  r.version = ddp::progress::kVersion;
  r.step = step;
  r.step_time_ns = step ? ns(step_t) : 0;
  r.saving_ms = static_cast<uint32_t>(saving_s * 1000 + 0.5);
  r.joined_time_ns = joined ? ns(joined) : 0;
  r.restored_time_ns = restored ? ns(restored) : 0;
  r.restored_next_step = resumed_from ? resumed_from + 1 : 0;
  return r;
}

// Both ranks of a two-rank node at the same step.
void read_both(GoodputLedger& l, double t, uint64_t step, double step_t, double saving_s = 0) {
  l.observe(t, 0, {record(step, step_t, saving_s), record(step, step_t, saving_s)});
}

double kind(const GoodputTotals& t, Badput k) { return t.badput_s[static_cast<size_t>(k)]; }

double sum(const GoodputTotals& t) {
  double s = t.goodput_s + t.pending_s;
  for (double b : t.badput_s) s += b;
  return s;
}

// Steps of 10 ms from step 1 at `first`: step k completed at first + 0.01 (k - 1).
double at(double first, uint64_t k) { return first + 0.01 * static_cast<double>(k - 1); }

}  // namespace

TEST_CASE("goodput: a run without failures is start-up, steps and shutdown, adding up to the wall time") {
  GoodputLedger l(1000);
  l.attempt_started(1000.1);
  l.observe(1000.3, 0, {record(0, 0), std::nullopt});  // fed, no step yet
  read_both(l, 1000.55, 1, 1000.5);
  for (uint64_t k : {50, 100, 141}) read_both(l, at(1000.5, k) + 0.001, k, at(1000.5, k));
  const GoodputTotals mid = l.totals(1002);
  CHECK(mid.ratio == Approx(1.4 / 2.0));  // the running attempt's steps so far count
  CHECK(mid.pending_s == Approx(2.0 - 0.5));
  l.attempt_ended(Ending::kFinished, 1002.0, 1002.0);
  l.job_ended(1002.1);
  const GoodputTotals t = l.totals(5000);  // after the end, the end's figures
  CHECK(t.wall_s == Approx(2.1));
  CHECK(kind(t, Badput::kStartup) == Approx(0.5));
  CHECK(t.goodput_s == Approx(1.4));
  CHECK(kind(t, Badput::kShutdown) == Approx(0.2));
  CHECK(t.pending_s == Approx(0).margin(1e-9));
  CHECK(sum(t) == Approx(t.wall_s));
  CHECK(t.ratio == Approx(1.4 / 2.1));
  CHECK(t.attempts == 1);
  CHECK_FALSE(t.coarse);
}

TEST_CASE("goodput: a crash's steps after the resume point are redone; restore is joined to restored") {
  GoodputLedger l(1000);
  l.attempt_started(1000.2);
  for (uint64_t k : {1, 30, 60, 90, 100}) read_both(l, at(1000.5, k) + 0.004, k, at(1000.5, k));
  l.attempt_ended(Ending::kCrashed, 1001.5, 1001.52);  // step 100 done at 1001.49
  const GoodputTotals waiting = l.totals(1001.6);
  CHECK(waiting.goodput_s == 0);  // attempt 0's steps wait for attempt 1's resume point
  CHECK(kind(waiting, Badput::kRedone) == Approx(0.01));
  CHECK(kind(waiting, Badput::kRestart) == Approx(0.02));
  l.attempt_started(1001.6);
  // Attempt 1 resumed from step 80: joined at 1001.7, restored at 1001.8, step 81 at 1001.9.
  l.observe(1001.95, 0, {record(81, 1001.9, 0, 80, 1001.7, 1001.8), record(81, 1001.91, 0, 80, 1001.7, 1001.8)});
  const GoodputTotals t = l.totals(1001.95);
  CHECK(t.goodput_s == Approx(0.79));  // steps 1..80 of attempt 0
  CHECK(kind(t, Badput::kRedone) == Approx(0.01 + 0.2));
  CHECK(kind(t, Badput::kRestore) == Approx(0.1));
  CHECK(kind(t, Badput::kRestart) == Approx(0.02 + 0.08 + 0.1 + 0.1));
  CHECK(kind(t, Badput::kStartup) == Approx(0.5));
  CHECK(sum(t) == Approx(t.wall_s));
  // The totals only grow (Prometheus counters).
  CHECK(kind(t, Badput::kRestart) >= kind(waiting, Badput::kRestart));
  CHECK(t.goodput_s >= waiting.goodput_s);
}

TEST_CASE("goodput: without a told resume point, the first step's number tells it") {
  GoodputLedger l(0);
  l.attempt_started(0);
  for (uint64_t k : {1, 50, 100}) read_both(l, at(1, k), k, at(1, k));
  l.attempt_ended(Ending::kCrashed, 2, 2);
  l.attempt_started(2);
  read_both(l, 3.05, 61, 3.0);  // heartbeat(61): global steps, resumed from 60
  CHECK(l.totals(3.05).goodput_s == Approx(0.59));
  CHECK(kind(l.totals(3.05), Badput::kRedone) == Approx(0.4 + 0.01));
}

TEST_CASE("goodput: a hang verdict, and a failure elsewhere, are the time from the last step") {
  for (auto [how, kind_of] :
       {std::pair{Ending::kHung, Badput::kHang}, std::pair{Ending::kElsewhere, Badput::kDetection}}) {
    GoodputLedger l(0);
    l.attempt_started(0);
    read_both(l, 1.01, 1, 1.0);
    read_both(l, 2.01, 101, 2.0);
    l.attempt_ended(how, 32.0, 33.0);
    const GoodputTotals t = l.totals(33);
    CHECK(kind(t, kind_of) == Approx(30.0));
    CHECK(kind(t, Badput::kRestart) == Approx(1.0));
    CHECK(t.pending_s == Approx(1.0));  // the steps, until a resume point or the end
    l.job_ended(34);
    CHECK(l.totals(34).goodput_s == Approx(1.0));  // no attempt resumed: they are kept
    CHECK(kind(l.totals(34), Badput::kShutdown) == Approx(1.0));
  }
}

TEST_CASE("goodput: time blocked saving is stall, a read far slower than the node's normal is slow") {
  GoodputLedger l(0);
  l.attempt_started(0);
  read_both(l, 1.0, 1, 1.0);
  // Ten reads of 50 steps in 0.5 s, the fifth spending 0.1 s of it saving.
  double t = 1.0, saving = 0;
  uint64_t step = 1;
  for (int i = 0; i < 10; ++i) {
    t += 0.5;
    step += 50;
    if (i == 4) {
      t += 0.1;
      saving += 0.1;
    }
    read_both(l, t, step, t, saving);
  }
  // Two reads at a third of the speed: 50 steps in 1.5 s each, 1 s of it slow each.
  for (int i = 0; i < 2; ++i) {
    t += 1.5;
    step += 50;
    read_both(l, t, step, t);
  }
  l.attempt_ended(Ending::kFinished, t, t);
  l.job_ended(t);
  const GoodputTotals g = l.totals(t);
  CHECK(kind(g, Badput::kStall) == Approx(0.1));
  CHECK(kind(g, Badput::kSlow) == Approx(2.0));
  CHECK(g.goodput_s == Approx(5.0 + 1.0));
  CHECK(sum(g) == Approx(g.wall_s));
}

TEST_CASE("goodput: records that go back or tell impossible times are ignored and counted") {
  GoodputLedger l(0);
  l.attempt_started(10);
  const auto step = [](uint64_t k) { return record(k, at(11, k)); };
  read_both(l, 11.01, 1, 11.0);
  read_both(l, 12.01, 101, 12.0);
  l.observe(12.2, 0, {record(50, 12.19), step(120)});                 // rank 0 goes back
  l.observe(12.3, 0, {record(130, 12.29 + 3.15e7), step(130)});       // a step a year ahead
  l.observe(12.4, 0, {step(140), record(140, 5.0)});                  // a step before the attempt
  l.observe(12.5, 0, {record(1000000000000, 12.49), step(150)});      // 10^12 steps in 0.1 s
  l.observe(12.6, 0, {record(160, at(11, 160), 0, 500), step(160)});  // resumed past its own step
  CHECK(l.totals(13).ignored_records == 5);
  read_both(l, 13.01, 201, 13.0);
  l.attempt_ended(Ending::kFinished, 13.0, 13.0);
  l.job_ended(13.0);
  const GoodputTotals t = l.totals(13);
  CHECK(t.goodput_s == Approx(2.0));  // steps 1..201, as if the lies had not been told
  CHECK(sum(t) == Approx(t.wall_s));
}

TEST_CASE("goodput: workers that feed no record get the coarse split") {
  GoodputLedger l(0);
  l.phase(Badput::kPreflight, 0);
  l.phase(Badput::kWaiting, 2);
  l.phase(Badput::kStartup, 3);
  l.attempt_started(3.5);
  l.observe(4, 0, {std::nullopt, std::nullopt});
  l.attempt_ended(Ending::kCrashed, 10, 10.5);
  l.attempt_started(11);
  l.attempt_ended(Ending::kFinished, 20, 20);
  l.job_ended(20);
  const GoodputTotals t = l.totals(20);
  CHECK(t.coarse);
  CHECK(kind(t, Badput::kPreflight) == Approx(2));
  CHECK(kind(t, Badput::kWaiting) == Approx(1));
  CHECK(kind(t, Badput::kStartup) == Approx(0.5));
  CHECK(kind(t, Badput::kRestart) == Approx(1.0));
  CHECK(t.goodput_s == Approx(6.5 + 9));
  CHECK(sum(t) == Approx(20));
  CHECK(ddp::launch::report::goodput_line(t).find("counts as goodput") != std::string::npos);
}

TEST_CASE("goodput: the summary line names the kinds that cost time") {
  GoodputTotals t;
  t.wall_s = 62.1;
  t.ratio = 0.959;
  t.badput_s[static_cast<size_t>(Badput::kStartup)] = 1.2;
  t.badput_s[static_cast<size_t>(Badput::kRedone)] = 0.6;
  t.badput_s[static_cast<size_t>(Badput::kHang)] = 0.01;  // too small to name
  CHECK(ddp::launch::report::goodput_line(t) == "goodput 95.9% of 62.1 s: startup 1.2 s, redone 0.6 s");
}
