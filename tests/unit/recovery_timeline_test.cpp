// The recovery timeline: phase times -> durations and the console line (pure); the recovery
// log's events and line on a real events.jsonl; the first-step watch on real record files.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <sstream>

#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include "contract/progress_file.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/progress/progress_monitor.hpp"
#include "launcher/report/recovery_log.hpp"
#include "launcher/report/recovery_timeline.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::launch;
using namespace ddp::launch::report;
using namespace ddp::launch::progress;
using namespace ddp::test;
using Clock = std::chrono::system_clock;
using nlohmann::json;
using std::chrono::milliseconds;

namespace {

const Clock::time_point t0 = Clock::time_point(std::chrono::seconds(1'800'000'000));

Clock::time_point at_ms(int ms) { return t0 + milliseconds(ms); }

RecoveryTimeline full_timeline(bool first_step) {
  RecoveryTimeline t(at_ms(0));
  t.mark(RecoveryPhase::kWorkersStopped, at_ms(10));
  t.mark(RecoveryPhase::kRendezvousDone, at_ms(30));
  t.mark(RecoveryPhase::kWorkersStarted, at_ms(30));
  t.set_started(4, 4);
  if (first_step) t.mark(RecoveryPhase::kFirstStep, at_ms(210));
  return t;
}

std::vector<json> read_events(const std::string& dir) {
  std::vector<json> events;
  std::istringstream lines(read_file(dir + "/events.jsonl"));
  for (std::string line; std::getline(lines, line);) events.push_back(json::parse(line));
  return events;
}

// Runs fn with fd 2 redirected to a file; returns what it wrote.
}  // namespace

TEST_CASE("recovery timeline: each phase's duration, and the total is their sum") {
  const RecoveryTimeline t = full_timeline(true);
  const auto d = t.durations();
  CHECK(d.stop_s == Approx(0.010));
  CHECK(d.store_s == Approx(0.020));
  CHECK(d.start_s == Approx(0.0).margin(1e-9));
  REQUIRE(d.first_step_s);
  CHECK(*d.first_step_s == Approx(0.180));
  CHECK(d.total_s == Approx(0.210));
  CHECK(t.has(RecoveryPhase::kFirstStep));
}

TEST_CASE("recovery timeline: the console line, with and without the first step") {
  CHECK(recovery_line(full_timeline(true)) ==
        "recovered in 0.21 s (stop 0.01, start 0.00 warm, store 0.02, first step 0.18)");
  RecoveryTimeline cold = full_timeline(false);
  cold.set_started(4, 0);
  CHECK(recovery_line(cold) == "recovered in 0.03 s (stop 0.01, start 0.00 cold, store 0.02)");
}

TEST_CASE("recovery timeline: the first step's parts when the workers told them: joined, restored, step") {
  RecoveryTimeline t = full_timeline(false);
  t.mark(RecoveryPhase::kJoined, at_ms(80));
  t.mark(RecoveryPhase::kRestored, at_ms(180));
  t.mark(RecoveryPhase::kFirstStep, at_ms(210));
  const auto d = t.durations();
  CHECK(*d.first_step_s == Approx(0.180));
  CHECK(*d.joined_s == Approx(0.050));
  CHECK(*d.restored_s == Approx(0.100));
  CHECK(*d.step_s == Approx(0.030));
  CHECK(d.total_s == Approx(0.210));  // the parts are inside first_step_s, not added to it
  CHECK(recovery_line(t) ==
        "recovered in 0.21 s (stop 0.01, start 0.00 warm, store 0.02, first step 0.18: joined 0.05, restored 0.10, "
        "step 0.03)");
  // Joined but nothing restored (a fresh start, a program without snapshots): no restored part.
  RecoveryTimeline joined_only = full_timeline(false);
  joined_only.mark(RecoveryPhase::kJoined, at_ms(100));
  joined_only.mark(RecoveryPhase::kFirstStep, at_ms(210));
  CHECK(!joined_only.durations().restored_s);
  CHECK(recovery_line(joined_only) ==
        "recovered in 0.21 s (stop 0.01, start 0.00 warm, store 0.02, first step 0.18: joined 0.07, step 0.11)");
}

TEST_CASE("recovery timeline: warm, cold, or how many of the workers were warm") {
  RecoveryTimeline t(t0);
  t.set_started(4, 0);
  CHECK(t.start_kind() == "cold");
  t.set_started(4, 4);
  CHECK(t.start_kind() == "warm");
  t.set_started(4, 3);
  CHECK(t.start_kind() == "3/4 warm");
  t.set_started(2, 5);  // never more warm workers than workers
  CHECK(t.warm_workers() == 2);
}

TEST_CASE("recovery timeline: a phase earlier than the one before it takes that one's time: no negative duration") {
  RecoveryTimeline t(at_ms(100));
  // A node whose workers had finished before it learned of a failure elsewhere.
  CHECK(t.mark(RecoveryPhase::kWorkersStopped, at_ms(40)) == 0.0);
  CHECK(t.mark(RecoveryPhase::kRendezvousDone, at_ms(150)) == Approx(0.05));
  // An unmarked phase (workers_started) counts as the one before it.
  t.mark(RecoveryPhase::kFirstStep, at_ms(140));
  const auto d = t.durations();
  CHECK(d.stop_s == 0.0);
  CHECK(d.start_s == 0.0);
  CHECK(*d.first_step_s == 0.0);
  CHECK(d.total_s == Approx(0.05));
}

TEST_CASE("recovery timeline: phase names as events.jsonl spells them") {
  CHECK(std::string(phase_name(RecoveryPhase::kFailureSeen)) == "failure_seen");
  CHECK(std::string(phase_name(RecoveryPhase::kWorkersStopped)) == "workers_stopped");
  CHECK(std::string(phase_name(RecoveryPhase::kRendezvousDone)) == "rendezvous_done");
  CHECK(std::string(phase_name(RecoveryPhase::kWorkersStarted)) == "workers_started");
  CHECK(std::string(phase_name(RecoveryPhase::kJoined)) == "joined");
  CHECK(std::string(phase_name(RecoveryPhase::kRestored)) == "restored");
  CHECK(std::string(phase_name(RecoveryPhase::kFirstStep)) == "first_step");
}

TEST_CASE("failed attempt: a local root cause's exit, else when the failure was learned; the last exit") {
  AttemptResult r;
  r.outcomes.resize(2);
  r.outcomes[0].time = at_ms(50);
  r.outcomes[1].time = at_ms(20);
  r.root_cause = 1;
  FailedAttempt f = failed_attempt(r, at_ms(900));
  CHECK(f.failure_seen == at_ms(20));
  CHECK(f.workers_stopped == at_ms(50));
  r.root_cause.reset();  // stopped for a failure elsewhere, learned at 30 ms
  f = failed_attempt(r, at_ms(30));
  CHECK(f.failure_seen == at_ms(30));
  CHECK(f.workers_stopped == at_ms(50));
  f = failed_attempt(r, at_ms(70));  // the workers had finished before
  CHECK(f.workers_stopped == at_ms(70));
}

TEST_CASE("recovery log: one event per phase as it happens, the summary, and the line at the first step") {
  TempDir dir;
  std::string err;
  {
    EventLog events(dir.path());
    events.set_attempt(1);
    RecoveryLog log(events);
    log.workers_started({at_ms(0), 2, 0});  // no restart yet (attempt 0): nothing
    err = stderr_of(dir / "err", [&] {
      log.begin({at_ms(0), at_ms(10)});
      log.rendezvous_done();
      log.workers_started({Clock::now(), 2, 1});
      log.first_step(FirstStep{Clock::now(), 1, 1, {}, {}});
      log.attempt_ended(true);  // already concluded: nothing more
    });
  }
  CHECK_THAT(err, Catch::Matches("ddp-launch: recovered in [0-9]+\\.[0-9]{2} s \\(stop 0\\.01, start [0-9]+\\.[0-9]{2} "
                                 "1/2 warm, store [0-9]+\\.[0-9]{2}, first step [0-9]+\\.[0-9]{2}\\)\n"));
  const auto events = read_events(dir.path());
  INFO(json(events).dump(1));
  REQUIRE(events.size() == 6);
  const std::vector<std::string> phases = {"failure_seen",    "workers_stopped", "rendezvous_done",
                                           "workers_started", "first_step",      "summary"};
  double since = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    CHECK(events[i].at("event") == "recovery");
    CHECK(events[i].at("attempt") == 1);
    CHECK(events[i].at("phase") == phases[i]);
    if (i + 1 < events.size()) {
      CHECK(events[i].at("since_failure_s").get<double>() >= since);
      since = events[i].at("since_failure_s").get<double>();
    }
  }
  CHECK(events[0].at("time") == "2027-01-15T08:00:00.000Z");  // the phase's time, not the write's
  CHECK(events[1].at("since_failure_s") == 0.01);
  CHECK(events[3].at("workers") == 2);
  CHECK(events[3].at("warm_workers") == 1);
  CHECK(events[3].at("start") == "1/2 warm");
  CHECK(events[4].at("rank") == 1);
  const json& s = events[5];
  CHECK(s.at("recovered") == true);
  CHECK(s.at("stop_s") == 0.01);
  CHECK(s.at("total_s").get<double>() == Approx(s.at("stop_s").get<double>() + s.at("store_s").get<double>() +
                                                s.at("start_s").get<double>() + s.at("first_step_s").get<double>())
                                             .margin(1e-5));
}

TEST_CASE("recovery log: the workers' joined and restored times as phases, and their parts in the summary") {
  TempDir dir;
  std::string err;
  {
    EventLog events(dir.path());
    events.set_attempt(1);
    RecoveryLog log(events);
    err = stderr_of(dir / "err", [&] {
      const auto started = Clock::now();
      log.begin({started - milliseconds(20), started - milliseconds(10)});
      log.rendezvous_done();
      log.workers_started({started, 2, 2});
      FirstStep step{started + milliseconds(300), 0, 1, started + milliseconds(100), started + milliseconds(250)};
      log.first_step(step);
    });
  }
  CHECK_THAT(err, Catch::Contains(": joined 0.10, restored 0.15, step 0.05)"));
  const auto events = read_events(dir.path());
  INFO(json(events).dump(1));
  REQUIRE(events.size() == 8);
  CHECK(events[4].at("phase") == "joined");
  CHECK(events[5].at("phase") == "restored");
  CHECK(events[6].at("phase") == "first_step");
  const json& s = events[7];
  CHECK(s.at("joined_s").get<double>() == Approx(0.10).margin(0.002));
  CHECK(s.at("restored_s").get<double>() == Approx(0.15).margin(0.002));
  CHECK(s.at("step_s").get<double>() == Approx(0.05).margin(0.002));
  CHECK(s.at("first_step_s").get<double>() == Approx(0.30).margin(0.002));
}

TEST_CASE("recovery log: no record: the line without first step; a failed attempt: a summary and no line") {
  TempDir dir;
  std::string err;
  {
    EventLog events(dir.path());
    RecoveryLog log(events);
    err = stderr_of(dir / "err", [&] {
      log.begin({at_ms(0), at_ms(0)});
      log.rendezvous_done();
      log.workers_started({Clock::now(), 1, 0});
      log.first_step(std::nullopt);  // no progress record fed
      log.begin({Clock::now(), Clock::now()});
      log.rendezvous_done();
      log.workers_started({Clock::now(), 1, 0});
      log.attempt_ended(false);  // failed again before its first step
    });
  }
  CHECK_THAT(err, Catch::Matches("ddp-launch: recovered in [0-9.]+ s \\(stop 0\\.00, start [0-9.]+ cold, store "
                                 "[0-9.]+\\)\n"));
  const auto events = read_events(dir.path());
  INFO(json(events).dump(1));
  REQUIRE(events.size() == 10);
  CHECK(events[4].at("phase") == "summary");
  CHECK(events[4].at("recovered") == true);
  CHECK(!events[4].contains("first_step_s"));
  CHECK(events[9].at("phase") == "summary");
  CHECK(events[9].at("recovered") == false);
}

TEST_CASE(
    "first-step watch: the earliest step of any rank, once, also at the attempt's end; no record file: nullopt at once") {
  TempDir dir;
  const std::string a = dir / "a", b = dir / "b";
  REQUIRE(ddp::progress::create_record_file(a) == 0);
  REQUIRE(ddp::progress::create_record_file(b) == 0);
  boost::asio::io_context io;
  ProgressMonitor watch(io, {});  // no sampling consumer: it reads for the first-step watch alone
  const ProgressMonitor::Probe probe{[](size_t) { return true; }, [](size_t) { return uint64_t{0}; }};
  const auto on_hang = [](HangVerdict) {};
  std::vector<std::optional<FirstStep>> seen;
  watch.start({{0, 0, a}, {1, 0, b}}, probe, on_hang, [&](const std::optional<FirstStep>& s) { seen.push_back(s); });
  io.run_for(FirstStepWatch::kPoll * 3);
  CHECK(seen.empty());  // zeroed records: nobody fed one yet
  // Rank 1 completes step 3 (its record's own time), rank 0 only initialises its record.
  ddp::progress::Record r{};
  r.magic = ddp::progress::kMagic;
  r.version = ddp::progress::kVersion;
  {
    std::FILE* f = std::fopen(a.c_str(), "r+b");
    std::fwrite(&r, sizeof r, 1, f);
    std::fclose(f);
  }
  r.step = 3;
  r.step_time_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
  r.joined_time_ns = r.step_time_ns - 300'000'000;  // rank 1 joined 0.3 s and restored 0.1 s before its step
  r.restored_time_ns = r.step_time_ns - 100'000'000;
  {
    std::FILE* f = std::fopen(b.c_str(), "r+b");
    std::fwrite(&r, sizeof r, 1, f);
    std::fclose(f);
  }
  io.restart();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);  // a loaded machine
  while (seen.empty() && std::chrono::steady_clock::now() < deadline) io.run_one_for(milliseconds(100));
  io.run_for(FirstStepWatch::kPoll * 2);  // no second report
  REQUIRE(seen.size() == 1);
  REQUIRE(seen[0]);
  CHECK(seen[0]->rank == 1);
  CHECK(seen[0]->step == 3);
  CHECK(seen[0]->time <= Clock::now());
  REQUIRE(seen[0]->joined);
  REQUIRE(seen[0]->restored);
  CHECK(std::chrono::duration<double>(seen[0]->time - *seen[0]->joined).count() == Approx(0.3).margin(0.01));
  CHECK(std::chrono::duration<double>(seen[0]->time - *seen[0]->restored).count() == Approx(0.1).margin(0.01));
  seen.clear();
  // The attempt ends before a poll: the last look still finds rank 1's step, once.
  watch.start({{0, 0, a}, {1, 0, b}}, probe, on_hang, [&](const std::optional<FirstStep>& s) { seen.push_back(s); });
  watch.end();
  watch.end();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0]->rank == 1);
  seen.clear();
  watch.start({{0, 0, a}}, probe, on_hang, [&](const std::optional<FirstStep>& s) { seen.push_back(s); });
  watch.end();  // nothing found: no report
  CHECK(seen.empty());
  watch.start({{0, 0, ""}}, probe, on_hang, [&](const std::optional<FirstStep>& s) { seen.push_back(s); });
  REQUIRE(seen.size() == 1);
  CHECK(!seen[0]);
}
