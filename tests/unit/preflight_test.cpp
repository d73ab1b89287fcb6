// The pre-flight verdict (launcher/preflight/verdict.hpp) from given figures, --preflight-conf
// and `ddp-launch preflight`'s arguments. Pure: the measurements are the e2e test's.
#include <catch2/catch.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/preflight_args.hpp"
#include "launcher/cli/preflight_conf.hpp"
#include "launcher/cli/strike_policy.hpp"
#include "launcher/multinode/node_screen.hpp"
#include "launcher/preflight/verdict.hpp"

using namespace ddp::launch;
using preflight::Figures;
using preflight::Level;

namespace {

// The message of the usage error (exit 121) that `f` throws, or "no error".
template <typename F>
std::string usage(F f) {
  try {
    f();
  } catch (const LaunchError& e) {
    CHECK(e.exit_code() == exit_code::kUsage);
    return std::string(e.what());
  }
  return std::string("no error");
}

Figures healthy(std::vector<double> gflops) {
  Figures f;
  for (size_t i = 0; i < gflops.size(); ++i) f.cores.push_back({static_cast<int>(i), gflops[i]});
  f.mem_available_gib = 20;
  f.workers = 4;
  f.folders = {{"snapshot regions", "/dev/shm", 10, ""}, {"run directory", "/tmp", 50, ""}};
  return f;
}

const preflight::Finding& find(const std::vector<preflight::Finding>& all, const std::string& check, size_t nth = 0) {
  for (const auto& f : all)
    if (f.check == check && nth-- == 0) return f;
  throw std::runtime_error("no finding " + check);
}

}  // namespace

TEST_CASE("preflight verdict: a clean node passes every check") {
  const auto findings = preflight::judge(healthy({10, 10.2, 9.9, 10.1}), {});
  CHECK(preflight::worst(findings) == Level::kPass);
  CHECK(findings.size() == 4);  // cpu, memory, shm, the run directory
  CHECK_THAT(find(findings, "cpu").figure, Catch::Contains("4 cores, median 10.05 GFLOP/s"));
}

TEST_CASE("preflight verdict: a core slower than the node's median core warns naming it and never fails") {
  auto f = healthy({10, 10, 6.5, 10});  // 0.65 of the median: below cpu_warn 0.75
  auto cpu = find(preflight::judge(f, {}), "cpu");
  CHECK(cpu.level == Level::kWarn);
  CHECK_THAT(cpu.figure, Catch::Contains("slowest: core 2 at 6.50 (0.65 of the median)"));
  CHECK_THAT(cpu.threshold, Catch::Contains("warn below 0.75 of the median core (cpu_warn)"));
  f.cores[2].gflops = 1;  // a core another program holds: a warning; slow nodes fail against the others
  CHECK(find(preflight::judge(f, {}), "cpu").level == Level::kWarn);
  cli::PreflightConf lenient;
  lenient.cpu_warn = 0.05;
  CHECK(find(preflight::judge(f, lenient), "cpu").level == Level::kPass);
}

TEST_CASE("preflight verdict: memory, /dev/shm per worker and the folders' space and writability") {
  auto f = healthy({10, 10});
  f.mem_available_gib = 1.5;    // below 2 x mem_gib 1: warn
  f.folders[0].free_gib = 0.9;  // 4 workers x 0.25 GiB = 1 GiB needed: fail
  f.folders.push_back({"--snapshot-persist-dir", "/ckpt", 0, "Read-only file system"});
  const auto findings = preflight::judge(f, {});
  CHECK(find(findings, "memory").level == Level::kWarn);
  const auto& shm = find(findings, "shm");
  CHECK(shm.level == Level::kFail);
  CHECK_THAT(shm.threshold, Catch::Contains("fail below 1 GiB (shm_gib_per_worker x 4 workers)"));
  const auto& persist = find(findings, "disk", 1);
  CHECK(persist.level == Level::kFail);
  CHECK_THAT(persist.figure, Catch::Contains("--snapshot-persist-dir /ckpt is not writable: Read-only file system"));
  CHECK(preflight::worst(findings) == Level::kFail);
  CHECK_THAT(preflight::format_findings(findings), Catch::Contains("preflight: fail shm: snapshot regions /dev/shm"));
}

TEST_CASE("preflight conf and the preflight command's arguments: values and errors that say what is wrong") {
  const auto c =
      cli::parse_preflight_conf("cpu_warn=0.9,cpu_fail=0.6,mem_gib=4,shm_gib_per_worker=2,disk_gib=10,cpu_ms=50");
  CHECK(c.cpu_warn == 0.9);
  CHECK(c.cpu_fail == 0.6);
  CHECK(c.mem_gib == 4);
  CHECK(c.shm_gib_per_worker == 2);
  CHECK(c.disk_gib == 10);
  CHECK(c.cpu_ms == 50);
  CHECK_THAT(usage([] { cli::parse_preflight_conf("cpu_warn=2"); }), Catch::Contains("expected a number from 0 to 1"));
  CHECK_THAT(usage([] { cli::parse_preflight_conf("gpu=1"); }), Catch::Contains("unknown key 'gpu'"));
  CHECK_THAT(usage([] { cli::parse_preflight_conf("cpu_warn"); }), Catch::Contains("expected key=value"));
  CHECK_THAT(usage([] { cli::parse_preflight_conf("cpu_warn=0.4"); }),
             Catch::Contains("cpu_fail (0.5) must not be above cpu_warn (0.4)"));
  const auto args =
      cli::parse_preflight_args({"--nproc-per-node", "8", "--preflight-conf", "disk_gib=2", "--log-dir", "/x"});
  REQUIRE(args);
  CHECK(args->workers == 8);
  CHECK(args->conf.disk_gib == 2);
  CHECK(args->log_dir == "/x");
  CHECK_FALSE(cli::parse_preflight_args({"--help"}));
  CHECK_THAT(usage([] { cli::parse_preflight_args({"--nproc-per-node", "0"}); }), Catch::Contains("from 1 to 4096"));
  CHECK_THAT(usage([] { cli::parse_preflight_args({"extra"}); }), Catch::Contains("unexpected 'extra'"));
}

TEST_CASE("the leader's screen: failed or slow nodes left out while MIN remain, else the round fails naming them") {
  auto node = [](const std::string& host, double gflops, const std::string& failed = "") {
    multinode::NodeInfo n;
    n.name = host + ":1";
    n.host = host;
    n.cpu_gflops = gflops;
    n.preflight_failed = failed;
    return n;
  };
  // d's cores are at 0.42 of the nodes' median: left out; c failed its own shm check: left out.
  std::vector<multinode::NodeInfo> joined{node("a", 20), node("b", 19), node("c", 21, "shm: /dev/shm: 0.1 GiB free"),
                                          node("d", 8), node("e", 14)};
  auto s = multinode::screen_nodes(joined, 2, {0.75, 0.5, cli::StrikePolicy{}});
  CHECK(s.error.empty());
  CHECK(s.kept == std::vector<size_t>{0, 1, 4});
  CHECK(s.left_out == std::vector<size_t>{2, 3});
  CHECK_THAT(s.why[0], Catch::Contains("node c (pid 0): its pre-flight check failed: shm: /dev/shm: 0.1 GiB free"));
  CHECK_THAT(s.why[1],
             Catch::Contains("node d (pid 0): cpu: its median core 8.00 GFLOP/s, 0.42 of the nodes' median 19.00"));
  REQUIRE(s.warnings.size() == 1);  // e at 0.74: warned, kept
  CHECK_THAT(s.warnings[0], Catch::Contains("node e (pid 0): cpu:") && Catch::Contains("warn below 0.75"));
  // With MIN 4 only three would remain: the round fails, naming both.
  s = multinode::screen_nodes(joined, 4, {0.75, 0.5, cli::StrikePolicy{}});
  CHECK_THAT(s.error, Catch::Contains("2 of 5 nodes failed, leaving 3, fewer than the 4 the job needs") &&
                          Catch::Contains("node c (") && Catch::Contains("node d ("));
  // Without --preflight on the leader (thresholds 0) only the nodes' own failures count; nodes
  // that measured nothing are not compared.
  s = multinode::screen_nodes({node("a", 0), node("b", 0), node("c", 20)}, 1, {});
  CHECK(s.left_out.empty());
  CHECK(s.warnings.empty());
}

TEST_CASE("the leader's screen: the store's host is never left out; its failed check fails the round") {
  auto node = [](const std::string& host, double gflops, const std::string& failed = "") {
    multinode::NodeInfo n;
    n.host = host;
    n.cpu_gflops = gflops;
    n.preflight_failed = failed;
    return n;
  };
  multinode::ScreenRules rules{0.75, 0.5, cli::StrikePolicy{}, 0};
  // Its slow CPU: kept, warned.
  auto s = multinode::screen_nodes({node("host", 5), node("b", 20), node("c", 21)}, 1, rules);
  CHECK(s.error.empty());
  CHECK(s.kept == std::vector<size_t>{0, 1, 2});
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0],
             Catch::Contains("node host (pid 0): cpu:") && Catch::Contains("kept: it hosts the job's store"));
  // Its own failed check: the round fails (the job cannot run without its store).
  s = multinode::screen_nodes({node("host", 20, "disk: /tmp: not writable"), node("b", 20)}, 1, rules);
  CHECK_THAT(s.error, Catch::Contains("the node that hosts the job's store failed") &&
                          Catch::Contains("disk: /tmp: not writable"));
}

TEST_CASE("strikes: a node at COUNT within the window is left out while MIN remain, the most struck first") {
  auto node = [](const std::string& host, std::vector<double> ages) {
    multinode::NodeInfo n;
    n.host = host;
    n.strike_ages_s = std::move(ages);
    return n;
  };
  const cli::StrikePolicy policy = cli::parse_strike_policy("3/600");
  CHECK(policy.count == 3);
  CHECK(policy.window_s == 600);
  CHECK(policy.within_window({700, 500, 10}) == 2);
  // b: 3 strikes in the window (one older does not count for c); d: 4.
  std::vector<multinode::NodeInfo> joined{node("a", {}), node("b", {400, 200, 5}), node("c", {900, 300, 2}),
                                          node("d", {500, 100, 50, 1})};
  multinode::ScreenRules rules{0, 0, policy, 0};
  auto s = multinode::screen_nodes(joined, 2, rules);
  CHECK(s.error.empty());
  CHECK(s.left_out == std::vector<size_t>{3, 1});  // d (4 strikes) first, then b
  CHECK(s.kept == std::vector<size_t>{0, 2});
  CHECK(s.codes == std::vector<int>{exit_code::kStruckOut, exit_code::kStruckOut});
  CHECK_THAT(s.why[0], Catch::Contains("node d (pid 0): struck out: its workers were the root cause 4 times within "
                                       "600 s (--strikes 3/600)"));
  // MIN 3: only one may go (d); b is kept, warned. The store's host is never left out.
  s = multinode::screen_nodes(joined, 3, rules);
  CHECK(s.left_out == std::vector<size_t>{3});
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0], Catch::Contains("strikes: node b (pid 0): struck out") &&
                                Catch::Contains("kept: without it fewer than the 3 nodes"));
  joined[0].strike_ages_s = {1, 2, 3};
  s = multinode::screen_nodes(joined, 1, rules);
  CHECK(s.left_out == std::vector<size_t>{3, 1});
  CHECK_THAT(s.warnings.at(0), Catch::Contains("node a (pid 0)") && Catch::Contains("kept: it hosts the job's store"));
  // Off: nobody is struck out.
  CHECK(multinode::screen_nodes(joined, 1, {0, 0, cli::parse_strike_policy("0"), -1}).left_out.empty());
  CHECK_THAT(usage([] { cli::parse_strike_policy("three"); }), Catch::Contains("expected COUNT or COUNT/SECONDS"));
  CHECK_THAT(usage([] { cli::parse_strike_policy("3/0"); }), Catch::Contains("--strikes 3/0"));
  CHECK(cli::parse_strike_policy("5").window_s == 3600);
}
