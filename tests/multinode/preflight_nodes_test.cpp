// --preflight on several launchers on loopback (docs/preflight.md): each node checks itself
// before its first join and sends the verdict with its join; the round's leader leaves out a
// failing node while --nnodes MIN remain (the others train, the node exits 118 saying why), and
// otherwise stops the job on every node before any worker starts, naming the node and the check.
// A failing node is made by a threshold past what any machine has (its /dev/shm); the others'
// thresholds are ones no machine misses, so a loaded test machine cannot fail them.
#include <catch2/catch.hpp>

#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

constexpr const char* kClean = "--preflight-conf=cpu_warn=0,cpu_fail=0,mem_gib=0,shm_gib_per_worker=0,disk_gib=0";
constexpr const char* kNoShm = "--preflight-conf=cpu_warn=0,cpu_fail=0,mem_gib=0,shm_gib_per_worker=1000000,disk_gib=0";

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

}  // namespace

TEST_CASE("preflight on three nodes: the failing node is left out and the other two train") {
  TempDir dir;
  const int port = free_port();
  const std::vector<std::string> common = {
      launcher_path(), "--nnodes=2:3",       "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:" + std::to_string(port),
      "--rdzv-id=pre", "--nproc-per-node=1", "--preflight"};
  const std::vector<std::string> worker = {"sh", "-c", "echo $WORLD_SIZE > " + dir.path() + "/world.$RANK"};
  // a hosts the agent store (is_host=1): the store's host is never left out, so the failing node
  // must not win the race for the port.
  const std::string host = "--rdzv-conf=join_timeout=60,last_call_timeout=30,is_host=1";
  const std::string other = "--rdzv-conf=join_timeout=60,last_call_timeout=30,is_host=0";
  Background a(with(common, with({host, kClean}, worker)));
  Background b(with(common, with({other, kClean}, worker)));
  const RunResult bad = run(with(common, with({other, kNoShm}, worker)), {}, 120s);
  const RunResult ra = a.wait(90s), rb = b.wait(90s);
  INFO(ra.err << "\n---\n" << rb.err << "\n---\n" << bad.err);
  CHECK(ra.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(bad.exit_code == 118);
  CHECK_THAT(bad.err, Catch::Contains("preflight: fail shm:") &&
                          Catch::Contains("this node was left out of the job: node ") &&
                          Catch::Contains("its pre-flight check failed: shm: snapshot regions /dev/shm"));
  CHECK_THAT(ra.err + rb.err, Catch::Contains("left out node "));
  CHECK(read_file(dir.path() + "/world.0") == "2\n");  // the round formed without it: MIN allows
  CHECK(read_file(dir.path() + "/world.1") == "2\n");
  CHECK_FALSE(file_exists(dir.path() + "/world.2"));
}

TEST_CASE("preflight on a static job: a failing node stops every node before any worker starts, named") {
  TempDir dir;
  const int port = free_port();
  auto node = [&](int rank, const char* conf) {
    return std::vector<std::string>{launcher_path(),
                                    "--nnodes=2",
                                    "--node-rank=" + std::to_string(rank),
                                    "--nproc-per-node=1",
                                    "--master-addr=127.0.0.1",
                                    "--master-port=" + std::to_string(port),
                                    "--rdzv-conf=join_timeout=60",
                                    "--preflight",
                                    conf,
                                    "sh",
                                    "-c",
                                    "touch " + dir.path() + "/ran.$RANK"};
  };
  Background leader(node(0, kClean));
  const RunResult bad = run(node(1, kNoShm), {}, 120s);
  const RunResult r0 = leader.wait(90s);
  INFO(r0.err << "\n---\n" << bad.err);
  CHECK(r0.exit_code == 118);
  CHECK(bad.exit_code == 118);
  for (const std::string& err : {r0.err, bad.err})
    CHECK_THAT(err, Catch::Contains("pre-flight: 1 of 2 nodes failed, leaving 1, fewer than the 2 the job needs") &&
                        Catch::Contains("node 1 (") && Catch::Contains("its pre-flight check failed: shm:"));
  CHECK_FALSE(file_exists(dir.path() + "/ran.0"));
  CHECK_FALSE(file_exists(dir.path() + "/ran.1"));
}

TEST_CASE(
    "preflight on three GPU nodes: the node whose GPUs all-reduce at a twentieth of the others' rate is left out") {
  // Two GPUs a node (CUDA_VISIBLE_DEVICES), NVML, the CUDA driver and NCCL played by the test's
  // stand-ins (tests/support/fake_nvml.c, fake_cuda.c): the slow node's all-reduce takes the
  // time of a 2 GB/s bus, the others' of 40 GB/s. Only the leader's comparison fails it: its own
  // checks pass.
  TempDir dir;
  const int port = free_port();
  const std::vector<std::string> common = {
      launcher_path(),
      "--nnodes=2:3",
      "--rdzv-backend=c10d",
      "--rdzv-endpoint=127.0.0.1:" + std::to_string(port),
      "--rdzv-id=nccl",
      "--nproc-per-node=gpu",
      "--preflight",
      "--preflight-conf=cpu_warn=0,cpu_fail=0,mem_gib=0,shm_gib_per_worker=0,disk_gib=0,nccl_mib=64"};
  const std::vector<std::string> worker = {"sh", "-c", "echo $WORLD_SIZE > " + dir.path() + "/world.$RANK"};
  auto gpus = [](const char* gbps) {
    return EnvOverrides{{"CUDA_VISIBLE_DEVICES", "0,1"},
                        {"DDP_LAUNCH_NVML_LIBRARY", DDP_FAKE_NVML},
                        {"FAKE_NVML", "ecc=0,0"},
                        {"DDP_LAUNCH_CUDA_LIBRARY", DDP_FAKE_CUDA},
                        {"DDP_LAUNCH_NCCL_LIBRARY", DDP_FAKE_CUDA},
                        {"FAKE_NCCL_GBPS", gbps}};
  };
  const std::string host = "--rdzv-conf=join_timeout=60,last_call_timeout=30,is_host=1";
  const std::string other = "--rdzv-conf=join_timeout=60,last_call_timeout=30,is_host=0";
  Background a(with(common, with({host}, worker)), gpus("40"));
  Background b(with(common, with({other}, worker)), gpus("40"));
  const RunResult slow = run(with(common, with({other}, worker)), gpus("2"), 120s);
  const RunResult ra = a.wait(90s), rb = b.wait(90s);
  INFO(ra.err << "\n---\n" << rb.err << "\n---\n" << slow.err);
  CHECK(ra.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(slow.exit_code == 118);
  CHECK_THAT(slow.err, Catch::Contains("this node was left out of the job: node ") &&
                           Catch::Contains("nccl: its GPUs' all-reduce bus bandwidth") &&
                           Catch::Contains("of the nodes' median") && Catch::Contains("(fail below 0.5)"));
  CHECK(read_file(dir.path() + "/world.0") == "4\n");  // two nodes of two workers each
  CHECK(read_file(dir.path() + "/world.3") == "4\n");
  CHECK_FALSE(file_exists(dir.path() + "/world.4"));
}
