// The agent store's connections as events and as something that can break: a two-node job
// whose store connections are cut for real (`ss -K`; root and CONFIG_INET_DIAG_DESTROY,
// else the case is skipped, 77) carries on without a restart; a worker failure reaches
// the other node through its abort watch, not at its next heartbeat tick.
#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "tests/support/connections.hpp"
#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> node(int node_rank, int port, const std::string& conf, const std::vector<std::string>& cmd) {
  std::vector<std::string> argv{launcher_path(),
                                "--nnodes=2",
                                "--node-rank=" + std::to_string(node_rank),
                                "--nproc-per-node=1",
                                "--master-addr=127.0.0.1",
                                "--master-port=" + std::to_string(port),
                                "--max-restarts=1",
                                "--rdzv-conf=join_timeout=60," + conf};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  return argv;
}

bool wait_for_files(const TempDir& dir, const std::vector<std::string>& names, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    bool all = true;
    for (const auto& n : names) all = all && file_exists(dir / n) && !read_file(dir / n).empty();
    if (all) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(50ms);
  }
}

}  // namespace

TEST_CASE("store connections cut again and again: the job carries on without a restart") {
  require_cut_connections();
  TempDir dir;
  const int port = free_port();
  const std::string script = "echo $TORCHELASTIC_RESTART_COUNT >> " + dir.path() + "/count.$RANK; sleep 8";
  Background node1(node(1, port, "heartbeat_interval=0.5,heartbeat_timeout=5", {"sh", "-c", script}));
  Background node0(node(0, port, "heartbeat_interval=0.5,heartbeat_timeout=5", {"sh", "-c", script}));
  REQUIRE(wait_for_files(dir, {"count.0", "count.1"}, 60s));
  int cuts = 0;
  for (int i = 0; i < 8; ++i) {
    cuts += cut_connections(port) ? 1 : 0;
    std::this_thread::sleep_for(400ms);
  }
  auto r0 = node0.wait(120s);
  auto r1 = node1.wait(120s);
  INFO("cuts: " << cuts << "\nnode 0:\n" << r0.err << "\nnode 1:\n" << r1.err);
  CHECK(cuts > 0);
  CHECK(r0.exit_code == 0);
  CHECK(r1.exit_code == 0);
  CHECK(read_file(dir / "count.0") == "0\n");
  CHECK(read_file(dir / "count.1") == "0\n");
  CHECK_THAT(r0.err + r1.err, !Catch::Contains("restarting") && !Catch::Contains("lost"));
}

// With a 30 s heartbeat interval, the tick alone would find the abort record up to 30 s
// late; the watch delivers it at once. The bound (20 s) is far above the expected ~1 s.
TEST_CASE("a worker failure restarts the other node through its abort watch, not at its next heartbeat") {
  TempDir dir;
  const int port = free_port();
  const std::string script = "echo $TORCHELASTIC_RESTART_COUNT >> " + dir.path() +
                             "/count.$RANK; "
                             "if [ $RANK = 1 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then "
                             "while [ ! -s " +
                             dir.path() +
                             "/count.0 ]; do sleep 0.05; done; sleep 0.5; exit 4; fi; "
                             "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then sleep 100; fi";
  const std::string conf = "heartbeat_interval=30,heartbeat_timeout=90";
  Background node1(node(1, port, conf, {"sh", "-c", script}));
  const auto started = std::chrono::steady_clock::now();
  auto r0 = run(node(0, port, conf, {"sh", "-c", script}), {}, 120s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  auto r1 = node1.wait(120s);
  INFO("node 0:\n" << r0.err << "\nnode 1:\n" << r1.err);
  CHECK(r0.exit_code == 0);
  CHECK(r1.exit_code == 0);
  CHECK(read_file(dir / "count.0") == "0\n1\n");
  CHECK(read_file(dir / "count.1") == "0\n1\n");
  CHECK_THAT(r0.err, Catch::Contains("restarting on every node in round 1"));
  CHECK(wall < 20.0);
}
