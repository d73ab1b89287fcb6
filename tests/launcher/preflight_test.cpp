// --preflight and `ddp-launch preflight` with real measurements (docs/preflight.md): a clean
// node's findings, a failing check that stops the node before any worker starts (exit 118,
// the check named on the console and in events.jsonl), and the command's exit codes. No figure
// is asserted: the thresholds are set where no machine misses them, or past what any machine
// has where a failure is wanted.
#include <catch2/catch.hpp>

#include <filesystem>
#include <regex>

#include "tests/launcher/run_events.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::test;
using nlohmann::json;

namespace {

// Thresholds no machine misses: a loaded test machine's cores, memory and disks pass.
constexpr const char* kNothingFails = "cpu_warn=0,cpu_fail=0,mem_gib=0,shm_gib_per_worker=0,disk_gib=0";

// The run's preflight events as "check level".
std::vector<std::string> preflight_events(const std::string& log_dir) {
  std::vector<std::string> out;
  for (const json& e : run_events(log_dir))
    if (e.at("event") == "preflight")
      out.push_back(e.at("check").get<std::string>() + " " + e.at("level").get<std::string>());
  return out;
}

}  // namespace

TEST_CASE("preflight command: every check's finding on stdout and exit 118 when one fails") {
  const TempDir scratch;
  RunResult r = launch({"preflight", "--nproc-per-node", "2", "--preflight-conf", kNothingFails});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  for (const char* check :
       {"cpu: [0-9]+ cores?, median", "memory: [0-9.]+ GiB available",
        "shm: snapshot regions /dev/shm: [0-9.]+ GiB free", "disk: run directory .*: [0-9.]+ GiB free"})
    CHECK(std::regex_search(r.out, std::regex(std::string("preflight: pass ") + check)));
  const std::string missing = scratch.path() + "/gone/deeper";
  r = launch({"preflight", "--snapshot-persist-dir", missing});
  CHECK(r.exit_code == 118);
  CHECK_THAT(r.out, Catch::Contains("preflight: fail disk: --snapshot-persist-dir " + missing +
                                    " is not writable: No such file or directory (writable)"));
  r = launch({"preflight", "--preflight-conf", "bogus=1"});
  CHECK(r.exit_code == 121);
  CHECK_THAT(r.err, Catch::Contains("unknown key 'bogus'"));
}

TEST_CASE(
    "launch with preflight: a clean node starts its workers and a failing check stops it before any worker starts") {
  const TempDir scratch;
  const std::string logs = scratch.path() + "/logs", marker = scratch.path() + "/worker-ran";
  std::filesystem::create_directories(logs);
  const std::vector<std::string> worker{"--no-python", "/bin/sh", "-c", "touch " + marker};
  std::vector<std::string> args{"--nproc-per-node", "2",          "--log-dir", logs, "--preflight",
                                "--preflight-conf", kNothingFails};
  args.insert(args.end(), worker.begin(), worker.end());
  RunResult r = launch(args);
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(file_exists(marker));
  CHECK(preflight_events(logs).size() == 4);

  std::filesystem::remove_all(logs);
  std::filesystem::create_directories(logs);
  std::filesystem::remove(marker);
  args = {"--nproc-per-node", "2", "--log-dir", logs, "--preflight", "--preflight-conf", "shm_gib_per_worker=1000000"};
  args.insert(args.end(), worker.begin(), worker.end());
  r = launch(args);
  CHECK(r.exit_code == 118);
  CHECK_FALSE(file_exists(marker));
  CHECK_THAT(r.err, Catch::Contains("preflight: fail shm: snapshot regions /dev/shm:") &&
                        Catch::Contains("fail below 2e+06 GiB (shm_gib_per_worker x 2 workers)") &&
                        Catch::Contains("pre-flight check failed on this node, no worker started: shm:"));
  const auto events = preflight_events(logs);
  CHECK(std::find(events.begin(), events.end(), "shm fail") != events.end());

  r = launch({"--preflight-conf", "cpu_warn=0.9", "--no-python", "/bin/true"});
  CHECK(r.exit_code == 121);
  CHECK_THAT(r.err, Catch::Contains("--preflight-conf needs --preflight"));
}

TEST_CASE("preflight command with --gpus: NVML's ECC errors, retired pages and clock reasons, from a stand-in NVML") {
  auto gpus = [](const std::string& fake, const std::string& nproc = "2") {
    return launch({"preflight", "--gpus", "--nproc-per-node", nproc, "--preflight-conf", kNothingFails},
                  {{"DDP_LAUNCH_NVML_LIBRARY", DDP_FAKE_NVML}, {"FAKE_NVML", fake}});
  };
  RunResult r = gpus("ecc=0,0;pending=0,0;events=0,0");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("preflight: pass gpu: 2 GPUs: no uncorrected ECC error, no pending retired page, "
                                    "clocks not held down"));
  r = gpus("ecc=0,3;pending=0,1;events=0x40,0");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 118);
  CHECK_THAT(r.out, Catch::Contains("preflight: fail gpu: GPU 1 (Fake GPU 1): 3 uncorrected ECC errors since the "
                                    "driver loaded") &&
                        Catch::Contains("preflight: fail gpu: GPU 1 (Fake GPU 1): retired memory pages wait for a GPU "
                                        "reset") &&
                        Catch::Contains("preflight: warn gpu: GPU 0 (Fake GPU 0): clocks held down (hardware thermal "
                                        "slowdown); SM at 800 of 1980 MHz"));
  // Another job's GPU 0 has ECC errors; this one was given GPUs 2 and 3 (Slurm's --gres does so).
  r = launch(
      {"preflight", "--gpus", "--nproc-per-node", "2", "--preflight-conf", kNothingFails},
      {{"DDP_LAUNCH_NVML_LIBRARY", DDP_FAKE_NVML}, {"FAKE_NVML", "ecc=5,0,0,0"}, {"CUDA_VISIBLE_DEVICES", "2,3"}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("preflight: pass gpu: 2 GPUs (the job's 2,3 of 4): no uncorrected ECC error"));
  r = gpus("ecc=0", "2");  // one GPU for two workers
  CHECK(r.exit_code == 118);
  CHECK_THAT(r.out, Catch::Contains("preflight: fail gpu: NVML sees 1 GPU; this node's workers use 2"));
  // No driver: a warning, the other checks still run.
  r = launch({"preflight", "--gpus", "--preflight-conf", kNothingFails},
             {{"DDP_LAUNCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1"}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("preflight: warn gpu: cannot load NVML (/nonexistent/libnvidia-ml.so.1): no NVIDIA "
                                    "driver here?; ECC, retired pages and clock reasons not checked"));
  // Without --gpus (a CPU job) there is no GPU check at all.
  r = launch({"preflight", "--preflight-conf", kNothingFails}, {{"DDP_LAUNCH_NVML_LIBRARY", DDP_FAKE_NVML}});
  CHECK(r.out.find(" gpu: ") == std::string::npos);
}

TEST_CASE("preflight command with --gpus: the NCCL all-reduce in a child process, from a stand-in CUDA and NCCL") {
  auto nccl = [](const EnvOverrides& overrides, const std::string& conf = "") {
    EnvOverrides env{{"DDP_LAUNCH_NVML_LIBRARY", DDP_FAKE_NVML},
                     {"FAKE_NVML", "ecc=0,0"},
                     {"DDP_LAUNCH_CUDA_LIBRARY", DDP_FAKE_CUDA},
                     {"DDP_LAUNCH_NCCL_LIBRARY", DDP_FAKE_CUDA}};
    for (const auto& [k, v] : overrides) env[k] = v;
    return launch({"preflight", "--gpus", "--nproc-per-node", "2", "--preflight-conf",
                   std::string(kNothingFails) + ",nccl_mib=16" + conf},
                  env);
  };
  // 16 MiB at 20 GB/s of bus bandwidth: 0.84 ms an all-reduce (the stand-in sleeps that long).
  RunResult r = nccl({{"FAKE_NCCL_GBPS", "20"}});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  std::smatch m;
  const std::string out = r.out;
  REQUIRE(std::regex_search(out, m,
                            std::regex("preflight: pass nccl: NCCL 2\\.27\\.7, 2 GPUs all-reduce 16 MiB in [0-9.]+ ms: "
                                       "bus bandwidth ([0-9.]+) GB/s \\(algorithm [0-9.]+ GB/s\\), the sum right")));
  const double busbw = std::stod(m[1]);
  CHECK(busbw <= 20.5);  // a sleep is never shorter than asked
  CHECK(busbw > 1);      // nor hundreds of times longer, even on a loaded machine

  // The absolute floor, a failed initialization and a wrong sum each fail the node (118).
  r = nccl({{"FAKE_NCCL_GBPS", "20"}}, ",nccl_min_gbps=1000");
  CHECK(r.exit_code == 118);
  CHECK_THAT(r.out, Catch::Contains("preflight: fail nccl: NCCL 2.27.7, 2 GPUs all-reduce 16 MiB") &&
                        Catch::Contains("bus bandwidth below 1000 GB/s (nccl_min_gbps)"));
  r = nccl({{"FAKE_NCCL_FAIL", "init"}});
  CHECK(r.exit_code == 118);
  CHECK_THAT(r.out,
             Catch::Contains("preflight: fail nccl: all-reduce of 16 MiB on 2 GPUs (NCCL 2.27.7): ncclCommInitAll: "
                             "unhandled system error"));
  r = nccl({{"FAKE_NCCL_FAIL", "sum"}});
  CHECK(r.exit_code == 118);
  CHECK_THAT(r.out, Catch::Contains("the sum is wrong: GPU 0 holds 8191 at float 0 after 12 all-reduces of ones, "
                                    "not 4096"));
  r = nccl({{"FAKE_CUDA_GPUS", "1"}});  // CUDA sees fewer GPUs than the workers use
  CHECK(r.exit_code == 118);
  CHECK_THAT(r.out, Catch::Contains(
                        "fail nccl: all-reduce of 16 MiB on 2 GPUs (NCCL 2.27.7): CUDA sees 1 GPU; this node's workers "
                        "use 2"));
  // No NCCL: a warning naming the variable to set; nccl_mib=0: no NCCL check at all.
  r = nccl({{"DDP_LAUNCH_NCCL_LIBRARY", "/nonexistent/libnccl.so.2"}});
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("preflight: warn nccl: cannot load NCCL (/nonexistent/libnccl.so.2): set "
                                    "DDP_LAUNCH_NCCL_LIBRARY to the libnccl.so.2 the job uses; the NCCL all-reduce "
                                    "not checked"));
  r = nccl({}, ",nccl_mib=0");
  CHECK(r.exit_code == 0);
  CHECK(r.out.find(" nccl: ") == std::string::npos);
}

TEST_CASE("pre-flight with --devices: the NCCL all-reduce runs on the GPUs the workers were given") {
  // GPU 0 is broken (stand-in CUDA), the job uses GPUs 1 and 2 only: the node passes, its
  // workers run. Given GPU 0 as well, the node fails, naming the call that failed.
  const TempDir scratch;
  const std::string marker = scratch.path() + "/ran";
  const EnvOverrides env{{"CUDA_VISIBLE_DEVICES", "0,1,2"},          {"FAKE_CUDA_BROKEN", "0"},
                         {"DDP_LAUNCH_NVML_LIBRARY", DDP_FAKE_NVML}, {"FAKE_NVML", "ecc=0,0,0"},
                         {"DDP_LAUNCH_CUDA_LIBRARY", DDP_FAKE_CUDA}, {"DDP_LAUNCH_NCCL_LIBRARY", DDP_FAKE_CUDA}};
  auto job = [&](const std::string& devices) {
    return launch({"--nproc-per-node", "2", "--devices", devices, "--preflight", "--preflight-conf",
                   std::string(kNothingFails) + ",nccl_mib=1", "--no-python", "sh", "-c",
                   "echo $CUDA_VISIBLE_DEVICES >> " + marker},
                  env);
  };
  RunResult r = job("1,2");
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK(read_file(marker) == "1,2\n1,2\n");  // each worker sees both, picks its LOCAL_RANK
  r = job("0,1");
  CHECK(r.exit_code == 118);
  CHECK_THAT(r.err, Catch::Contains(
                        "preflight: fail nccl: all-reduce of 1 MiB on 2 GPUs (NCCL 2.27.7): cuDevicePrimaryCtxRetain: "
                        "unknown error"));
}

TEST_CASE("pre-flight with GPUs: a Python job's NCCL is its torch wheel's, found beside its interpreter") {
  // A Python environment whose torch wheel's NCCL is the stand-in (2.27.7); the machine's own
  // NCCL, if any, is another. DDP_LAUNCH_NCCL_LIBRARY still wins.
  const TempDir venv;
  std::filesystem::create_directories(venv.path() + "/bin");
  const std::string python = venv.path() + "/bin/python3";
  const RunResult which = run({"sh", "-c", "command -v python3"});
  REQUIRE(which.exit_code == 0);
  std::filesystem::create_symlink(which.out.substr(0, which.out.find('\n')), python);
  const std::string wheel = venv.path() + "/lib/python3.11/site-packages/nvidia/nccl/lib";
  std::filesystem::create_directories(wheel);
  std::filesystem::copy_file(DDP_FAKE_CUDA, wheel + "/libnccl.so.2");
  EnvOverrides env{{"PYTHON_EXEC", python},
                   {"CUDA_VISIBLE_DEVICES", "0,1"},
                   {"DDP_LAUNCH_NVML_LIBRARY", DDP_FAKE_NVML},
                   {"FAKE_NVML", "ecc=0,0"},
                   {"DDP_LAUNCH_CUDA_LIBRARY", DDP_FAKE_CUDA},
                   {"DDP_LAUNCH_NCCL_LIBRARY", kUnset}};
  const std::string conf = std::string(kNothingFails) + ",nccl_mib=1";
  RunResult r = launch({"preflight", "--gpus", "--nproc-per-node", "2", "--preflight-conf", conf}, env);
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("preflight: pass nccl: NCCL 2.27.7, 2 GPUs all-reduce 1 MiB"));
  // A job: the script runs under that interpreter, after the same check.
  const TempDir work;
  const std::string script = work.path() + "/job.py";
  write_file(script, "open(r'" + work.path() + "/ran', 'a').write('x')\n");
  r = launch({"--nproc-per-node", "gpu", "--preflight", "--preflight-conf", conf, script}, env);
  CHECK(r.exit_code == 0);
  CHECK(read_file(work.path() + "/ran") == "xx");
  env["DDP_LAUNCH_NCCL_LIBRARY"] = "/nonexistent/libnccl.so.2";
  r = launch({"preflight", "--gpus", "--nproc-per-node", "2", "--preflight-conf", conf}, env);
  CHECK_THAT(r.out, Catch::Contains("preflight: warn nccl: cannot load NCCL (/nonexistent/libnccl.so.2)"));
}
