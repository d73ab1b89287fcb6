// The recovery timeline of a restart with real processes: events.jsonl's `recovery` events in
// order with consistent durations, and the console line `recovered in ...` once, with the first
// step when the workers feed their progress records (python/ddp_progress.py) and without it
// when they feed none (docs/events.md "Recovery").
#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tests/launcher/run_events.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// The `recovery` events of the only run directory under log_dir.
std::vector<json> recovery_events(const std::string& log_dir) {
  std::vector<json> out;
  for (json& j : run_events(log_dir))
    if (j.at("event") == "recovery") out.push_back(std::move(j));
  return out;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

const char* const kLine =
    "ddp-launch: recovered in [0-9]+\\.[0-9]{2} s \\(stop [0-9]+\\.[0-9]{2}, start [0-9]+\\.[0-9]{2} "
    "cold, store [0-9]+\\.[0-9]{2}";

// The phases of one restart in order, all in the new attempt, since_failure_s never going
// back, and a summary whose durations add up to its total.
void check_timeline(const std::vector<json>& events, int attempt, bool first_step) {
  std::vector<std::string> want = {"failure_seen", "workers_stopped", "rendezvous_done", "workers_started"};
  if (first_step) want.push_back("first_step");
  want.push_back("summary");
  std::vector<std::string> phases;
  for (const auto& e : events) phases.push_back(e.at("phase"));
  REQUIRE(phases == want);
  double since = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    CHECK(events[i].at("attempt") == attempt);
    const double s = events[i].at("since_failure_s").get<double>();
    CHECK(s >= since);
    since = s;
  }
  CHECK(events[0].at("since_failure_s") == 0.0);
  const json& started = events[3];
  CHECK(started.at("warm_workers") == 0);
  CHECK(started.at("start") == "cold");
  const json& s = events.back();
  CHECK(s.at("recovered") == true);
  double sum = 0;
  for (const char* key : {"stop_s", "store_s", "start_s", "first_step_s"}) {
    if (!s.contains(key)) continue;
    CHECK(s.at(key).get<double>() >= 0);
    sum += s.at(key).get<double>();
  }
  CHECK(s.contains("first_step_s") == first_step);
  CHECK(s.at("total_s").get<double>() == Approx(sum).margin(1e-5));
  CHECK(s.at("total_s").get<double>() == Approx(since).margin(1e-5));  // the last phase's offset
}

}  // namespace

TEST_CASE("recovery: a worker that fails once: the timeline in events.jsonl and one line with the first step") {
  TempDir dir, logs;
  // Attempt 0: rank 1 fails after its first step; attempt 1: every rank takes 3 steps.
  write_file(dir / "worker.py", R"(
import os, sys, time
sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_progress as p
p.heartbeat(1)
if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
    if os.environ["RANK"] == "1":
        sys.exit(3)
    time.sleep(60)
for step in range(2, 5):
    time.sleep(0.05)
    p.heartbeat(step)
)");
  const EnvOverrides env = {{"DDP_TEST_PYTHON_DIR", std::string(DDP_SOURCE_DIR) + "/python"}};
  // Cold restarts: a loaded machine could let a standby get ready first (then "warm").
  auto r = launch(
      {"--nproc-per-node=2", "--max-restarts=1", "--no-warm-restarts", "--log-dir", logs.path(), dir / "worker.py"},
      env, 120s);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Matches("(.|\\n)*" + std::string(kLine) + ", first step [0-9]+\\.[0-9]{2}\\)\n(.|\\n)*"));
  CHECK(count_of(r.err, "recovered in") == 1);
  const auto events = recovery_events(logs.path());
  INFO(json(events).dump(1));
  check_timeline(events, 1, true);
  CHECK(events[3].at("workers") == 2);
  CHECK(events[4].at("step").get<int>() >= 1);
  CHECK((events[4].at("rank") == 0 || events[4].at("rank") == 1));
}

TEST_CASE("recovery: workers that feed no progress record get the line without first step, at the attempt's end") {
  TempDir logs;
  auto r = launch({"--nproc-per-node=2", "--max-restarts=1", "--log-dir", logs.path(), "sh", "-c",
                   "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then [ $RANK = 1 ] && exit 3; sleep 60; fi"},
                  {}, 120s);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Matches("(.|\\n)*" + std::string(kLine) + "\\)\n(.|\\n)*"));
  CHECK(count_of(r.err, "recovered in") == 1);
  CHECK_THAT(r.err, !Catch::Contains("first step"));
  const auto events = recovery_events(logs.path());
  INFO(json(events).dump(1));
  check_timeline(events, 1, false);
}

TEST_CASE("recovery: a restart that fails again logs a summary that did not recover, and no line") {
  TempDir logs;
  auto r = launch({"--nproc-per-node=1", "--max-restarts=1", "--log-dir", logs.path(), "sh", "-c", "exit 3"}, {}, 120s);
  INFO(r.err);
  REQUIRE(r.exit_code == 3);
  CHECK_THAT(r.err, !Catch::Contains("recovered in"));
  const auto events = recovery_events(logs.path());
  INFO(json(events).dump(1));
  REQUIRE(events.size() == 5);
  CHECK(events.back().at("phase") == "summary");
  CHECK(events.back().at("recovered") == false);
}
