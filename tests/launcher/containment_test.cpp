// Nothing outlives a job: workers that start helpers escaping in every way a process can
// (tests/support/escaping_worker.sh: own session, double fork, own process group, nohup, the
// worker's session ignoring SIGTERM, stopped), for each way a job ends (exit 0, a failure, a
// failure then a restart, Ctrl-C, a hang verdict, SIGKILL of the launcher), with a cgroup and
// with the subreaper alone. Zero processes of the job are left (every process whose environment
// holds this case's marker, read in /proc), and the launcher's parent (this test) and a
// sibling that looks like another job are untouched.
#include <catch2/catch.hpp>

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

#include "tests/launcher/run_events.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

// The modes this machine has: subreaper always; cgroup where ddp-launch can make one (root or a
// delegated cgroup v2 subtree with cgroup.kill), else said once and left out.
const std::vector<std::string>& modes() {
  static const std::vector<std::string> available = [] {
    const RunResult probe = launch({"--containment=cgroup", "--nproc-per-node=1", "true"});
    if (probe.exit_code == 0) return std::vector<std::string>{"cgroup", "subreaper"};
    WARN("no cgroup on this machine, the subreaper mode alone is tested: " << probe.err);
    return std::vector<std::string>{"subreaper"};
  }();
  return available;
}
const std::vector<std::string> kKinds{"setsid", "doublefork", "pgroup", "nohup", "session", "stopped"};

std::string escaping_worker() { return std::string(DDP_SOURCE_DIR) + "/tests/support/escaping_worker.sh"; }

bool all_up(const TempDir& dir, int ranks, int attempt = 0) {
  for (int r = 0; r < ranks; ++r)
    if (!file_exists(dir / ("up." + std::to_string(r) + "." + std::to_string(attempt)))) return false;
  return true;
}

// The helpers' pids the workers recorded for attempt `attempt`.
std::vector<pid_t> helper_pids(const TempDir& dir, int ranks, int attempt = 0) {
  std::vector<pid_t> pids;
  for (const auto& kind : kKinds)
    for (int r = 0; r < ranks; ++r) {
      const std::string text = read_file(dir / (kind + "." + std::to_string(r) + "." + std::to_string(attempt)));
      if (!text.empty()) pids.push_back(static_cast<pid_t>(std::stol(text)));
    }
  return pids;
}

std::string pid_list(const std::vector<pid_t>& pids) {
  std::string s;
  for (pid_t p : pids) s += std::to_string(p) + " ";
  return s;
}

// One job of 2 escaping workers: its directory, its marker, a sibling that looks like another job.
struct EscapeJob {
  TempDir dir;
  std::string marker = "DDP_TEST_ESCAPE_MARK=" + dir.path();
  Background sibling{{"sleep", "1000"}, {{"DDP_LAUNCH_JOB_TOKEN", "another-job"}}};

  std::vector<std::string> args(const std::string& mode, const std::vector<std::string>& extra,
                                const std::string& end) const {
    std::vector<std::string> a{"--nproc-per-node=2", "--shutdown-timeout=1", "--containment=" + mode};
    a.insert(a.end(), extra.begin(), extra.end());
    a.insert(a.end(), {escaping_worker(), dir.path(), end});
    return a;
  }
  EnvOverrides env() const { return {{"DDP_TEST_ESCAPE_MARK", dir.path()}}; }

  // The launcher in the background, returned once every worker's helpers are up, to signal.
  std::unique_ptr<Background> start_until_up(const std::string& mode) const {
    std::vector<std::string> argv{launcher_path()};
    for (const auto& a : args(mode, {}, "wait")) argv.push_back(a);
    auto launcher = std::make_unique<Background>(argv, env());
    REQUIRE(wait_until([&] { return all_up(dir, 2); }, 60s));
    return launcher;
  }

  // Nothing of the job is left, and the sibling and this test (the launcher's parent) live.
  void check_nothing_left(int ranks, int attempts = 1) const {
    std::vector<pid_t> helpers;
    for (int a = 0; a < attempts; ++a)
      for (pid_t p : helper_pids(dir, ranks, a)) helpers.push_back(p);
    CHECK(helpers.size() == kKinds.size() * static_cast<size_t>(ranks * attempts));
    std::vector<pid_t> alive;
    for (pid_t p : helpers)
      if (process_alive(p)) alive.push_back(p);
    INFO("helpers alive: " << pid_list(alive));
    CHECK(alive.empty());
    INFO("processes of the job alive: " << pid_list(processes_with_env(marker)));
    CHECK(processes_with_env(marker).empty());
    CHECK(process_alive(sibling.pid()));
    CHECK(process_alive(::getpid()));
  }
};

}  // namespace

TEST_CASE("workers exit 0: every helper they left, however it escaped, is gone when the launcher returns") {
  for (const auto& mode : modes()) {
    INFO("--containment=" << mode);
    EscapeJob job;
    TempDir logs;
    auto r = launch(job.args(mode, {"--log-dir=" + logs.path()}, "exit0"), job.env(), 120s);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    job.check_nothing_left(2);
    CHECK_THAT(r.err, Catch::Contains("containment: " + mode));
    CHECK_THAT(r.err, Catch::Contains("12 processes outlived their workers"));
    CHECK_THAT(r.err, Catch::Contains("killed by SIGKILL after 1.0 s"));  // the ones ignoring SIGTERM
    // The event log names each one: how it ended and the rank it came from.
    size_t leftovers = 0, killed = 0;
    for (const auto& e : run_events(logs.path()))
      if (e["event"] == "leftover") {
        ++leftovers;
        killed += e["ended_by"] == "SIGKILL";
        CHECK((e["rank"] == 0 || e["rank"] == 1));
      }
    CHECK(leftovers == 12);
    CHECK(killed >=
          6);  // setsid, doublefork, pgroup, session ignore SIGTERM (x2 ranks); nohup and stopped may go by SIGTERM
  }
}

TEST_CASE("a worker fails: the helpers of every worker are gone when the launcher returns") {
  for (const auto& mode : modes()) {
    INFO("--containment=" << mode);
    EscapeJob job;
    auto r = launch(job.args(mode, {}, "exit3"), job.env(), 120s);
    INFO(r.err);
    CHECK(r.exit_code == 3);
    job.check_nothing_left(2);
  }
}

TEST_CASE("a restart starts only after the last attempt's helpers are gone") {
  for (const auto& mode : modes()) {
    INFO("--containment=" << mode);
    EscapeJob job;
    auto r = launch(job.args(mode, {"--max-restarts=1", "--no-warm-restarts"}, "restart"), job.env(), 120s);
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(read_file(job.dir / "clean.0.1") == "clean\n");
    CHECK(read_file(job.dir / "clean.1.1") == "clean\n");
    job.check_nothing_left(2, 2);
  }
}

TEST_CASE("Ctrl-C on the launcher: the helpers are gone when it returns") {
  for (const auto& mode : modes()) {
    INFO("--containment=" << mode);
    EscapeJob job;
    auto launcher = job.start_until_up(mode);
    launcher->signal(SIGINT);
    auto r = launcher->wait(60s);
    INFO(r.err);
    CHECK(r.exit_code == 130);
    job.check_nothing_left(2);
  }
}

TEST_CASE("a hang verdict: the hung workers' helpers are gone when the launcher returns") {
  for (const auto& mode : modes()) {
    INFO("--containment=" << mode);
    EscapeJob job;
    auto r = launch(job.args(mode, {"--hang-timeout=2"}, "wait"), job.env(), 120s);
    INFO(r.err);
    CHECK(r.exit_code != 0);
    CHECK_THAT(r.err, Catch::Contains("hang"));
    job.check_nothing_left(2);
  }
}

TEST_CASE("SIGKILL of the launcher: the watchdog ends the helpers, and nothing of another job") {
  for (const auto& mode : modes()) {
    INFO("--containment=" << mode);
    EscapeJob job;
    auto launcher = job.start_until_up(mode);
    launcher->signal(SIGKILL);
    launcher->wait(30s);
    CHECK(wait_until([&] { return processes_with_env(job.marker).empty(); }, 15s));
    job.check_nothing_left(2);
  }
}
