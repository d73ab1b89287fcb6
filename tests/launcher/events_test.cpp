// RUN/events.jsonl with real processes: the event sequence of a crash and its restart, a
// worker killed by a signal, and a straggler, each line parsed as JSON (docs/events.md).
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

// Every line of the only run directory's events.jsonl under log_dir, parsed, but the
// recovery timeline's (recovery_test.cpp checks those).
std::vector<json> read_events(const std::string& log_dir) {
  std::vector<json> events;
  for (json& j : run_events(log_dir))
    if (j.at("event") != "recovery") events.push_back(std::move(j));
  return events;
}

std::vector<std::string> names(const std::vector<json>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(e.at("event").get<std::string>());
  return out;
}

// Every event has its name, a UTC timestamp and the attempt.
void check_common_fields(const std::vector<json>& events) {
  for (const auto& e : events) {
    INFO(e.dump());
    CHECK(e.at("time").get<std::string>().size() == std::string("2026-11-30T11:06:53.123Z").size());
    CHECK(e.at("attempt").is_number_integer());
  }
}

}  // namespace

TEST_CASE("events: a crash, the restart, and the finish, in order, with their fields") {
  TempDir logs;
  // Attempt 0: rank 1 exits 3 while rank 0 waits (stopped by the launcher); attempt 1: both succeed.
  // Rank 0 waits as `sleep` itself (exec): a shell's child sleep that outlived it would add a
  // `leftover` event whenever the stop came after the fork (their own tests: tests/launcher's
  // containment cases).
  auto r = launch({"--nproc-per-node=2", "--max-restarts=1", "--log-dir", logs.path(), "sh", "-c",
                   "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then [ $RANK = 1 ] && exit 3; exec sleep 60; fi"},
                  {}, 120s);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto events = read_events(logs.path());
  INFO(json(events).dump(1));
  check_common_fields(events);
  CHECK(names(events) == std::vector<std::string>{"start", "worker_exit", "worker_exit", "failure", "restart",
                                                  "worker_exit", "worker_exit", "goodput", "finish"});
  CHECK(events[0].at("nproc") == 2);
  CHECK(events[0].at("max_restarts") == 1);
  CHECK(events[0].at("hang_timeout") == "auto");
  CHECK(events[1].at("rank") == 1);
  CHECK(events[1].at("exit_code") == 3);
  CHECK(events[1].at("stopped_by_launcher") == false);
  CHECK(events[2].at("rank") == 0);
  CHECK(events[2].at("signal") == "SIGTERM");
  CHECK(events[2].at("stopped_by_launcher") == true);
  CHECK(events[3].at("kind") == "crash");
  CHECK(events[3].at("rank") == 1);
  CHECK(events[3].at("exit_code") == 3);
  CHECK(events[3].at("final") == false);
  CHECK(events[3].at("attempt") == 0);
  CHECK(events[4].at("attempt") == 1);
  CHECK(events[4].at("restart") == 1);
  for (size_t i : {5, 6}) {
    CHECK(events[i].at("attempt") == 1);
    CHECK(events[i].at("exit_code") == 0);
  }
  // The ledger: `sh` feeds no progress record (the coarse split); its kinds add up to the wall
  // time; the restart is named, on the console too (the job restarted).
  const json& g = events[7];
  CHECK(g.at("coarse") == true);
  double sum = g.at("goodput_s").get<double>() + g.at("pending_s").get<double>();
  for (const char* kind : {"preflight", "waiting", "startup", "restart", "restore", "redone", "stall", "slow", "hang",
                           "detection", "shutdown"})
    sum += g.at(std::string(kind) + "_s").get<double>();
  CHECK(sum == Catch::Detail::Approx(g.at("wall_s").get<double>()).epsilon(0.01));
  CHECK(g.at("restart_s").get<double>() > 0);
  CHECK(g.at("pending_s") == 0);
  CHECK_THAT(r.err, Catch::Contains("ddp-launch: goodput "));
  CHECK(events[8].at("outcome") == "succeeded");
  CHECK(events[8].at("exit_code") == 0);
}

TEST_CASE("events: a worker killed by a signal is a failure of kind signal, and the job's finish says failed") {
  TempDir logs;
  auto r = launch({"--nproc-per-node=1", "--log-dir", logs.path(), "sh", "-c", "kill -KILL $$"}, {}, 60s);
  REQUIRE(r.exit_code == 137);
  const auto events = read_events(logs.path());
  INFO(json(events).dump(1));
  check_common_fields(events);
  REQUIRE(names(events) == std::vector<std::string>{"start", "worker_exit", "failure", "goodput", "finish"});
  CHECK(events[1].at("signal") == "SIGKILL");
  CHECK(events[2].at("kind") == "signal");
  CHECK(events[2].at("final") == true);
  CHECK(events[4].at("outcome") == "failed");
  CHECK(events[4].at("exit_code") == 137);
  CHECK(r.err.find("ddp-launch: goodput ") == std::string::npos);  // one short attempt: no line
}

TEST_CASE(
    "straggler: the rank that sleeps extra per step is named once (notice and event), no other, nothing stopped") {
  TempDir dir, logs;
  write_file(dir / "worker.py", R"(
import os, sys, time
sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_progress as p
rank, t0, step = int(os.environ["RANK"]), time.monotonic(), 0
while time.monotonic() - t0 < 16:
    time.sleep(0.4 if rank == 1 else 0.05)
    step += 1
    p.heartbeat(step)
)");
  const EnvOverrides env = {{"DDP_TEST_PYTHON_DIR", std::string(DDP_SOURCE_DIR) + "/python"}};
  auto r = launch({"--nproc-per-node=3", "--log-dir", logs.path(), dir / "worker.py"}, env, 120s);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Matches("(.|\\n)*straggler: rank 1 \\(pid [0-9]+\\) takes [0-9.]+ s per step, [0-9.]+x the "
                                   "job median of [0-9.e-]+ s \\(--straggler-threshold 2\\); reporting only(.|\\n)*"));
  size_t count = 0;
  for (size_t at = r.err.find("straggler:"); at != std::string::npos; at = r.err.find("straggler:", at + 1)) ++count;
  CHECK(count == 1);
  const auto events = read_events(logs.path());
  INFO(json(events).dump(1));
  check_common_fields(events);
  std::vector<json> stragglers;
  for (const auto& e : events)
    if (e.at("event") == "straggler") stragglers.push_back(e);
  REQUIRE(stragglers.size() == 1);
  CHECK(stragglers[0].at("rank") == 1);
  CHECK(stragglers[0].at("step_s").get<double>() > 0);
  CHECK(stragglers[0].at("median_s").get<double>() > 0);
  CHECK(stragglers[0].at("threshold") == 2.0);
  CHECK(names(events).front() == "start");
  CHECK(names(events).back() == "finish");
  auto off = launch({"--nproc-per-node=3", "--straggler-threshold=0", dir / "worker.py"}, env, 120s);
  CHECK(off.exit_code == 0);
  CHECK_THAT(off.err, !Catch::Contains("straggler:"));
}
