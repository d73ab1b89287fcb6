// The pre-flight verdict (launcher/preflight/verdict.hpp) from given figures, --preflight-conf
// and `ddp-launch preflight`'s arguments. Pure: the measurements are the e2e test's.
#include <catch2/catch.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/preflight_args.hpp"
#include "launcher/cli/preflight_conf.hpp"
#include "launcher/cli/strike_policy.hpp"
#include "launcher/rendezvous/node_screen.hpp"
#include "launcher/rendezvous/strike_record.hpp"
#include "launcher/preflight/nccl_probe.hpp"
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
  const auto nccl = cli::parse_preflight_conf("nccl_mib=8,nccl_min_gbps=40,nccl_warn=0.8,nccl_fail=0.6");
  CHECK(nccl.nccl_mib == 8);
  CHECK(nccl.nccl_min_gbps == 40);
  CHECK(nccl.nccl_warn == 0.8);
  CHECK(nccl.nccl_fail == 0.6);
  CHECK_THAT(usage([] { cli::parse_preflight_conf("nccl_warn=0.4"); }),
             Catch::Contains("nccl_fail (0.5) must not be above nccl_warn (0.4)"));
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
    rendezvous::NodeInfo n;
    n.name = host + ":1";
    n.host = host;
    n.cpu_gflops = gflops;
    n.preflight_failed = failed;
    return n;
  };
  // d's cores are at 0.42 of the nodes' median: left out; c failed its own shm check: left out.
  std::vector<rendezvous::NodeInfo> joined{node("a", 20), node("b", 19), node("c", 21, "shm: /dev/shm: 0.1 GiB free"),
                                           node("d", 8), node("e", 14)};
  auto s = rendezvous::screen_nodes(joined, 2, {0.75, 0.5, cli::StrikePolicy{}});
  CHECK(s.error.empty());
  CHECK(s.kept == std::vector<size_t>{0, 1, 4});
  CHECK(s.left_out == std::vector<size_t>{2, 3});
  CHECK_THAT(s.why[0], Catch::Contains("node c (pid 0): its pre-flight check failed: shm: /dev/shm: 0.1 GiB free"));
  CHECK_THAT(s.why[1],
             Catch::Contains("node d (pid 0): cpu: its median core 8.00 GFLOP/s, 0.42 of the nodes' median 19.00"));
  REQUIRE(s.warnings.size() == 1);  // e at 0.74: warned, kept
  CHECK_THAT(s.warnings[0], Catch::Contains("node e (pid 0): cpu:") && Catch::Contains("warn below 0.75"));
  // With MIN 4 only three would remain: the round fails, naming both.
  s = rendezvous::screen_nodes(joined, 4, {0.75, 0.5, cli::StrikePolicy{}});
  CHECK_THAT(s.error, Catch::Contains("2 of 5 nodes failed, leaving 3, fewer than the 4 the job needs") &&
                          Catch::Contains("node c (") && Catch::Contains("node d ("));
  // Without --preflight on the leader (thresholds 0) only the nodes' own failures count; nodes
  // that measured nothing are not compared.
  s = rendezvous::screen_nodes({node("a", 0), node("b", 0), node("c", 20)}, 1, {});
  CHECK(s.left_out.empty());
  CHECK(s.warnings.empty());
}

TEST_CASE("the leader's screen: a node whose GPUs all-reduce below nccl_fail of the nodes' median is left out") {
  auto node = [](const std::string& host, double busbw) {
    rendezvous::NodeInfo n;
    n.host = host;
    n.cpu_gflops = 20;
    n.nccl_busbw_gbps = busbw;
    return n;
  };
  rendezvous::ScreenRules rules{0.75, 0.5, cli::StrikePolicy{}, 0, 0.75, 0.5};
  // d at 0.26 of the median (a degraded NVLink, GPUs on the wrong PCIe switch): left out; e at
  // 0.71: warned; b measured nothing (one GPU): not compared.
  auto s = rendezvous::screen_nodes(
      {node("a", 180), node("b", 0), node("c", 190), node("d", 46), node("e", 128), node("f", 185)}, 2, rules);
  CHECK(s.left_out == std::vector<size_t>{3});
  CHECK_THAT(s.why.at(0), Catch::Contains("node d (pid 0): nccl: its GPUs' all-reduce bus bandwidth 46.0 GB/s, 0.26 of "
                                          "the nodes' median 180.0 (fail below 0.5)"));
  CHECK(s.codes.at(0) == exit_code::kPreflightFailed);
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0], Catch::Contains("preflight: warn node e (pid 0): nccl:") &&
                                Catch::Contains("0.71 of the nodes' median 180.0 (warn below 0.75)"));
  // Without --preflight on the leader (thresholds 0) they are not compared.
  CHECK(rendezvous::screen_nodes({node("a", 180), node("d", 10), node("c", 190)}, 1, {}).left_out.empty());
}

TEST_CASE("the GPU check judges the job's GPUs only: CUDA_VISIBLE_DEVICES's indices or UUIDs, else every GPU") {
  Figures f;
  f.gpus_needed = 2;
  f.gpus.nvml = true;
  f.gpus.count = 4;
  for (int i = 0; i < 4; ++i) {
    preflight::GpuFigures::Device d;
    d.index = i;
    d.uuid = "GPU-0000000" + std::to_string(i) + "-aaaa";
    d.ecc_uncorrected = i == 0 ? 7 : 0;  // another job's GPU 0
    f.gpus.devices.push_back(d);
  }
  auto gpu_level = [&](std::vector<std::string> ids) {
    f.gpu_ids = std::move(ids);
    Level level = Level::kPass;
    std::string figures;
    for (const auto& x : preflight::judge(f, cli::PreflightConf{}))
      if (x.check == "gpu") level = std::max(level, x.level), figures += x.figure + "\n";
    return std::make_pair(level, figures);
  };
  auto [level, figures] = gpu_level({"2", "3"});
  CHECK(level == Level::kPass);
  CHECK_THAT(figures, Catch::Contains("2 GPUs (the job's 2,3 of 4): no uncorrected ECC error"));
  std::tie(level, figures) = gpu_level({"GPU-00000001", "GPU-00000003-aaaa"});  // UUIDs, a prefix as CUDA takes
  CHECK(level == Level::kPass);
  std::tie(level, figures) = gpu_level({"0", "1"});
  CHECK(level == Level::kFail);
  CHECK_THAT(figures, Catch::Contains("GPU 0: 7 uncorrected ECC errors"));
  std::tie(level, figures) = gpu_level({"MIG-1f2e", "1"});  // not NVML's to number: every GPU
  CHECK(level == Level::kFail);
  std::tie(level, figures) = gpu_level({});
  CHECK(level == Level::kFail);
}

TEST_CASE("the NCCL probe's figures: its line read back, anything else read as a failure naming it") {
  preflight::NcclFigures f;
  f.loaded = true;
  f.version = "2.27.7";
  f.gpus = 8;
  f.mib = 64;
  f.iterations = 10;
  f.seconds = 0.00125;
  f.algbw_gbps = 53.7;
  f.busbw_gbps = 93.9;
  const auto back = preflight::parse_nccl_figures(preflight::nccl_figures_json(f));
  CHECK(back.loaded);
  CHECK(back.error.empty());
  CHECK(back.version == "2.27.7");
  CHECK(back.gpus == 8);
  CHECK(back.seconds == 0.00125);
  CHECK(back.busbw_gbps == 93.9);
  const auto bad = preflight::parse_nccl_figures("Segmentation fault");
  CHECK(bad.loaded);
  CHECK_THAT(bad.error, Catch::Contains("the probe's output is not its figures: 'Segmentation fault'"));
  // The verdict: one GPU has no link to measure; the absolute floor fails; a missing library warns.
  Figures figures;
  figures.gpus_needed = 8;
  figures.gpus.nvml = true;
  figures.gpus.count = 8;
  figures.nccl = f;
  cli::PreflightConf conf;
  auto finding = [&] {
    for (const auto& x : preflight::judge(figures, conf))
      if (x.check == "nccl") return x;
    FAIL("no nccl finding");
    return preflight::Finding{};
  };
  CHECK(finding().level == Level::kPass);
  CHECK_THAT(finding().figure, Catch::Contains("NCCL 2.27.7, 8 GPUs all-reduce 64 MiB in 1.25 ms: bus bandwidth 93.9 "
                                               "GB/s (algorithm 53.7 GB/s), the sum right"));
  conf.nccl_min_gbps = 100;
  CHECK(finding().level == Level::kFail);
  figures.nccl->gpus = 1;
  CHECK(finding().level == Level::kPass);
  CHECK_THAT(finding().figure, Catch::Contains("no link between GPUs to measure (one GPU), the sum right"));
  figures.nccl = preflight::NcclFigures{};
  figures.nccl->error = "cannot load NCCL (libnccl.so.2): set DDP_LAUNCH_NCCL_LIBRARY";
  CHECK(finding().level == Level::kWarn);
}

TEST_CASE("strike record: the times within the window kept, anything else read as none; the node's id") {
  using rendezvous::parse_strike_times;
  CHECK(parse_strike_times("[1000.5, 400, 3000]", 3100, 2500) == std::vector<double>{1000.5, 3000});
  CHECK(parse_strike_times(rendezvous::format_strike_times({10, 20}), 30, 3600) == std::vector<double>{10, 20});
  CHECK(parse_strike_times("not json", 30, 3600).empty());
  CHECK(parse_strike_times("{\"a\": 1}", 30, 3600).empty());
  CHECK(parse_strike_times("[\"x\", 25]", 30, 3600) == std::vector<double>{25});
  CHECK(rendezvous::strike_times_within({50, 5, 40}, 60, 30) == std::vector<double>{40, 50});
  CHECK(rendezvous::strikes_key("vm-3") == "strikes/vm-3");
  CHECK(rendezvous::node_id({}, "vm-3") == "vm-3");
  CHECK(rendezvous::node_id({{"DDP_LAUNCH_NODE_ID", "rack2-n7"}}, "pod-abc") == "rack2-n7");
  CHECK(rendezvous::node_id({{"DDP_LAUNCH_NODE_ID", ""}}, "pod-abc") == "pod-abc");
}

TEST_CASE("the leader's screen: the store's host is never left out; its failed check fails the round") {
  auto node = [](const std::string& host, double gflops, const std::string& failed = "") {
    rendezvous::NodeInfo n;
    n.host = host;
    n.cpu_gflops = gflops;
    n.preflight_failed = failed;
    return n;
  };
  rendezvous::ScreenRules rules{0.75, 0.5, cli::StrikePolicy{}, 0};
  // Its slow CPU: kept, warned.
  auto s = rendezvous::screen_nodes({node("host", 5), node("b", 20), node("c", 21)}, 1, rules);
  CHECK(s.error.empty());
  CHECK(s.kept == std::vector<size_t>{0, 1, 2});
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0],
             Catch::Contains("node host (pid 0): cpu:") && Catch::Contains("kept: it hosts the job's store"));
  // Its own failed check: the round fails (the job cannot run without its store).
  s = rendezvous::screen_nodes({node("host", 20, "disk: /tmp: not writable"), node("b", 20)}, 1, rules);
  CHECK_THAT(s.error, Catch::Contains("the node that hosts the job's store failed") &&
                          Catch::Contains("disk: /tmp: not writable"));
}

TEST_CASE("strikes: a node at COUNT within the window is left out while MIN remain, the most struck first") {
  auto node = [](const std::string& host, std::vector<double> ages) {
    rendezvous::NodeInfo n;
    n.host = host;
    n.strike_ages_s = std::move(ages);
    return n;
  };
  const cli::StrikePolicy policy = cli::parse_strike_policy("3/600");
  CHECK(policy.count == 3);
  CHECK(policy.window_s == 600);
  CHECK(policy.within_window({700, 500, 10}) == 2);
  // b: 3 strikes in the window (one older does not count for c); d: 4.
  std::vector<rendezvous::NodeInfo> joined{node("a", {}), node("b", {400, 200, 5}), node("c", {900, 300, 2}),
                                           node("d", {500, 100, 50, 1})};
  rendezvous::ScreenRules rules{0, 0, policy, 0};
  auto s = rendezvous::screen_nodes(joined, 2, rules);
  CHECK(s.error.empty());
  CHECK(s.left_out == std::vector<size_t>{3, 1});  // d (4 strikes) first, then b
  CHECK(s.kept == std::vector<size_t>{0, 2});
  CHECK(s.codes == std::vector<int>{exit_code::kStruckOut, exit_code::kStruckOut});
  CHECK_THAT(s.why[0], Catch::Contains("node d (pid 0): struck out: its workers were the root cause 4 times within "
                                       "600 s (--strikes 3/600)"));
  // MIN 3: only one may go (d); b is kept, warned. The store's host is never left out.
  s = rendezvous::screen_nodes(joined, 3, rules);
  CHECK(s.left_out == std::vector<size_t>{3});
  REQUIRE(s.warnings.size() == 1);
  CHECK_THAT(s.warnings[0], Catch::Contains("strikes: node b (pid 0): struck out") &&
                                Catch::Contains("kept: without it fewer than the 3 nodes"));
  joined[0].strike_ages_s = {1, 2, 3};
  s = rendezvous::screen_nodes(joined, 1, rules);
  CHECK(s.left_out == std::vector<size_t>{3, 1});
  CHECK_THAT(s.warnings.at(0), Catch::Contains("node a (pid 0)") && Catch::Contains("kept: it hosts the job's store"));
  // Off: nobody is struck out.
  CHECK(rendezvous::screen_nodes(joined, 1, {0, 0, cli::parse_strike_policy("0"), -1}).left_out.empty());
  CHECK_THAT(usage([] { cli::parse_strike_policy("three"); }), Catch::Contains("expected COUNT or COUNT/SECONDS"));
  CHECK_THAT(usage([] { cli::parse_strike_policy("3/0"); }), Catch::Contains("--strikes 3/0"));
  CHECK(cli::parse_strike_policy("5").window_s == 3600);
}
