// Several launchers on one machine (loopback) forming one job: they agree on ranks and
// the workers' store, fail together, restart together, and notice a lost peer.
#include <catch2/catch.hpp>

#include <csignal>
#include <map>
#include <memory>

#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> static_node(int nnodes, int node_rank, int port, int nproc) {
  return {launcher_path(), "--nnodes=" + std::to_string(nnodes), "--node-rank=" + std::to_string(node_rank),
          "--nproc-per-node=" + std::to_string(nproc), "--master-addr=127.0.0.1",
          "--master-port=" + std::to_string(port), "--rdzv-conf=join_timeout=60"};
}

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// Reads DIR/env.RANK files written by `env > DIR/env.$RANK`.
std::map<int, std::map<std::string, std::string>> read_envs(const TempDir& dir, int max_rank) {
  std::map<int, std::map<std::string, std::string>> out;
  for (int r = 0; r < max_rank; ++r) {
    for (const auto& line : lines_of(read_file(dir / ("env." + std::to_string(r))))) {
      auto eq = line.find('=');
      if (eq != std::string::npos) out[r][line.substr(0, eq)] = line.substr(eq + 1);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("static rendezvous: two nodes agree on ranks, world size and the workers' store") {
  TempDir dir;
  int port = free_port();
  std::string dump = "env > " + dir.path() + "/env.$RANK";
  Background node1(with(static_node(2, 1, port, 3), {"sh", "-c", dump}));
  auto r0 = run(with(static_node(2, 0, port, 2), {"sh", "-c", dump}), {}, 120s);
  auto r1 = node1.wait(60s);
  INFO(r0.err << r1.err);
  REQUIRE(r0.exit_code == 0);
  REQUIRE(r1.exit_code == 0);
  auto envs = read_envs(dir, 8);
  REQUIRE(envs.size() == 5);  // heterogeneous: 2 + 3 workers
  for (int rank = 0; rank < 5; ++rank) {
    auto& e = envs[rank];
    CHECK(e["RANK"] == std::to_string(rank));
    CHECK(e["WORLD_SIZE"] == "5");
    CHECK(e["GROUP_WORLD_SIZE"] == "2");
    CHECK(e["GROUP_RANK"] == (rank < 2 ? "0" : "1"));
    CHECK(e["LOCAL_RANK"] == std::to_string(rank < 2 ? rank : rank - 2));
    CHECK(e["LOCAL_WORLD_SIZE"] == (rank < 2 ? "2" : "3"));
    CHECK(e["MASTER_ADDR"] == "127.0.0.1");
    CHECK(e["MASTER_PORT"] == envs[0]["MASTER_PORT"]);
    CHECK(e["MASTER_PORT"] != std::to_string(port));  // the agent store is not the workers' store
  }
}

TEST_CASE("dynamic rendezvous: three nodes, an explicit --node-rank honoured") {
  TempDir dir;
  int port = free_port();
  std::vector<std::string> common = {launcher_path(), "--nnodes=3", "--rdzv-backend=c10d",
                                     "--rdzv-endpoint=127.0.0.1:" + std::to_string(port), "--rdzv-id=dyn",
                                     "--nproc-per-node=1", "--rdzv-conf=join_timeout=60"};
  std::string dump = "env > " + dir.path() + "/env.$RANK";
  Background a(with(common, {"sh", "-c", dump}));
  Background b(with(common, {"--node-rank=2", "sh", "-c", "touch " + dir.path() + "/pinned.$GROUP_RANK; " + dump}));
  auto c = run(with(common, {"sh", "-c", dump}), {}, 120s);
  auto ra = a.wait(60s);
  auto rb = b.wait(60s);
  INFO(ra.err << rb.err << c.err);
  CHECK(c.exit_code == 0);
  CHECK(ra.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(file_exists(dir / "pinned.2"));
  auto envs = read_envs(dir, 3);
  REQUIRE(envs.size() == 3);
  for (auto& [rank, e] : envs) {
    CHECK(e["WORLD_SIZE"] == "3");
    CHECK(e["GROUP_RANK"] == std::to_string(rank));
    CHECK(e["TORCHELASTIC_RUN_ID"] == "dyn");
  }
}

TEST_CASE("a late node makes every node restart into a bigger round") {
  TempDir dir;
  int port = free_port();
  std::vector<std::string> common = {launcher_path(), "--nnodes=2:3", "--rdzv-backend=c10d",
                                     "--rdzv-endpoint=127.0.0.1:" + std::to_string(port), "--nproc-per-node=1",
                                     "--rdzv-conf=join_timeout=60,last_call_timeout=0.5"};
  // Workers run until a world of 3 has formed, then finish.
  std::string script = "echo $WORLD_SIZE >> " + dir.path() + "/worlds.$GROUP_RANK; "
                       "if [ $WORLD_SIZE = 3 ]; then exit 0; fi; sleep 60";
  Background a(with(common, {"sh", "-c", script}));
  Background b(with(common, {"sh", "-c", script}));
  REQUIRE(wait_until([&] { return file_exists(dir / "worlds.0") && file_exists(dir / "worlds.1"); }, 60s));
  auto late = run(with(common, {"sh", "-c", script}), {}, 120s);
  auto ra = a.wait(60s);
  auto rb = b.wait(60s);
  INFO(ra.err << rb.err << late.err);
  CHECK(late.exit_code == 0);
  CHECK(ra.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(read_file(dir / "worlds.0") == "2\n3\n");
  CHECK(read_file(dir / "worlds.2") == "3\n");
  CHECK_THAT(ra.err + rb.err, Catch::Contains("a new node is waiting to join"));
}

TEST_CASE("a node that finishes early waits for the others, and the job succeeds") {
  TempDir dir;
  int port = free_port();
  Background node1(with(static_node(2, 1, port, 1), {"true"}));
  auto r0 = run(with(static_node(2, 0, port, 1), {"sh", "-c", "sleep 3; touch " + (dir / "slow-done")}), {}, 120s);
  auto r1 = node1.wait(60s);
  INFO(r0.err << r1.err);
  CHECK(r0.exit_code == 0);
  CHECK(r1.exit_code == 0);
  CHECK(file_exists(dir / "slow-done"));
}

TEST_CASE("a worker failure on one node stops every node with the same root cause") {
  int port = free_port();
  Background node1(with(static_node(2, 1, port, 2),
                        {"sh", "-c", "if [ $RANK = 3 ]; then sleep 0.5; exit 3; fi; sleep 60"}));
  auto r0 = run(with(static_node(2, 0, port, 2), {"sh", "-c", "sleep 60"}), {}, 120s);
  auto r1 = node1.wait(60s);
  CHECK(r0.exit_code == 3);
  CHECK(r1.exit_code == 3);
  CHECK_THAT(r0.err, Catch::Contains("FAILED on node 1") && Catch::Contains("rank      : 3 (local_rank: 1)") &&
                         Catch::Contains("exit code 3"));
  CHECK_THAT(r1.err, Catch::Contains("Root cause") && Catch::Contains("rank      : 3 (local_rank: 1)"));
}

TEST_CASE("max-restarts restarts every node together with a consistent restart count") {
  TempDir dir;
  int port = free_port();
  std::string script = "echo $TORCHELASTIC_RESTART_COUNT >> " + dir.path() + "/count.$RANK; "
                       "if [ $RANK = 2 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then "
                       "while [ ! -s " + dir.path() + "/count.0 ] || [ ! -s " + dir.path() + "/count.1 ]; do sleep 0.02; done; "
                       "exit 5; fi; sleep 0.3";
  Background node1(with(static_node(2, 1, port, 1), {"--max-restarts=2", "sh", "-c", script}));
  auto r0 = run(with(static_node(2, 0, port, 2), {"--max-restarts=2", "sh", "-c", script}), {}, 120s);
  auto r1 = node1.wait(60s);
  INFO(r0.err << r1.err);
  CHECK(r0.exit_code == 0);
  CHECK(r1.exit_code == 0);
  for (int rank = 0; rank < 3; ++rank) CHECK(read_file(dir / ("count." + std::to_string(rank))) == "0\n1\n");
}

// Two nodes with one sleeping worker each; SIGKILL node `victim`'s launcher. The survivor
// must stop its worker and exit 124 with every one of `messages` in its report.
static void kill_one_node(int victim, const std::vector<std::string>& messages) {
  TempDir dir;
  int port = free_port();
  std::string script = "echo $$ > " + dir.path() + "/pid.$RANK; sleep 300";
  Background node0(with(static_node(2, 0, port, 1), {"sh", "-c", script}));
  Background node1(with(static_node(2, 1, port, 1), {"sh", "-c", script}));
  REQUIRE(wait_until([&] { return file_exists(dir / "pid.0") && file_exists(dir / "pid.1"); }, 60s));
  const int survivor = 1 - victim;
  pid_t survivor_worker = std::stoi(read_file(dir / ("pid." + std::to_string(survivor))));
  (victim == 0 ? node0 : node1).signal(SIGKILL);
  auto r = (survivor == 0 ? node0 : node1).wait(60s);
  CHECK(r.exit_code == 124);
  for (const auto& m : messages) CHECK_THAT(r.err, Catch::Contains(m));
  CHECK_FALSE(process_alive(survivor_worker));
}

TEST_CASE("a SIGKILLed launcher is noticed by the other node, which stops its workers") {
  kill_one_node(1, {"node 1 (", "was lost"});
}

TEST_CASE("the leader's death stops the followers") { kill_one_node(0, {"lost the agent store"}); }

TEST_CASE("a duplicate node rank is reported, not hung on") {
  int port = free_port();
  // The workers live 2 s so that a node 1 that comes second still finds the job (and its
  // plan) there, instead of a store already gone because the job had finished.
  Background first(with(static_node(2, 1, port, 1), {"sleep", "2"}));
  Background second(with(static_node(2, 1, port, 1), {"sleep", "2"}));
  auto leader = run(with(static_node(2, 0, port, 1), {"sleep", "2"}), {}, 120s);
  // Node 0 and one node 1 may form the job; the other node 1 is refused. Or both node 1s
  // joined first and the round fails. Either way nothing hangs and the error is clear.
  auto r1 = first.wait(60s);
  auto r2 = second.wait(60s);
  std::string all = leader.err + r1.err + r2.err;
  INFO(all);
  CHECK((r1.exit_code == 124 || r2.exit_code == 124));
  CHECK_THAT(all, Catch::Contains("claimed twice") || Catch::Contains("maximum of 2 nodes"));
}

TEST_CASE("mismatched --nnodes is reported") {
  int port = free_port();
  Background other(with(static_node(3, 1, port, 1), {"true"}));
  auto leader = run(with(static_node(2, 0, port, 1), {"true"}), {}, 120s);
  auto r = other.wait(60s);
  CHECK(leader.exit_code == 124);
  CHECK(r.exit_code == 124);
  CHECK_THAT(leader.err, Catch::Contains("disagree on --nnodes"));
}

TEST_CASE("a node without the shared token is refused") {
  int port = free_port();
  Background leader(with(static_node(2, 0, port, 1), {"--rdzv-conf=join_timeout=5,token=right", "true"}));
  auto intruder = run(with(static_node(2, 1, port, 1), {"--rdzv-conf=join_timeout=5,token=wrong", "true"}), {}, 60s);
  CHECK(intruder.exit_code != 0);
  CHECK_THAT(intruder.err, Catch::Contains("token") || Catch::Contains("rejected") || Catch::Contains("authent"));
  auto r = leader.wait(60s);
  CHECK(r.exit_code == 124);  // nobody valid joined: a clear timeout
}

TEST_CASE("the agent store listens where the job lives; bind_all listens everywhere, with a warning without a token") {
  int port = free_port();
  Background node1(with(static_node(2, 1, port, 1), {"true"}));
  auto loopback = run(with(static_node(2, 0, port, 1), {"true"}), {}, 120s);
  REQUIRE(node1.wait(60s).exit_code == 0);
  REQUIRE(loopback.exit_code == 0);
  CHECK_THAT(loopback.err, Catch::Contains("listening on 127.0.0.1:" + std::to_string(port)));
  CHECK_THAT(loopback.err, !Catch::Contains("without a token"));

  port = free_port();
  const std::string all = "--rdzv-conf=join_timeout=60,bind_all=1";
  Background other(with(static_node(2, 1, port, 1), {all, "true"}));
  auto everywhere = run(with(static_node(2, 0, port, 1), {all, "true"}), {}, 120s);
  REQUIRE(other.wait(60s).exit_code == 0);
  REQUIRE(everywhere.exit_code == 0);
  CHECK_THAT(everywhere.err, Catch::Contains("listening on 0.0.0.0:" + std::to_string(port)));
  CHECK_THAT(everywhere.err, Catch::Contains("without a token") && Catch::Contains("--rdzv-conf token="));
}

TEST_CASE("scripts/run-node.sh: the same line on every node, ranks from the environment") {
  TempDir dir;
  int port = free_port();
  std::string script = std::string(DDP_SOURCE_DIR) + "/scripts/run-node.sh";
  std::string dump = "env > " + dir.path() + "/env.$RANK";
  EnvOverrides common{{"NNODES", "2"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", std::to_string(port)},
                      {"NPROC_PER_NODE", "2"}, {"DDP_LAUNCH", launcher_path()},
                      {"DDP_LAUNCH_ARGS", "--rdzv-conf=join_timeout=60"}};
  auto env1 = common;
  env1["NODE_RANK"] = "1";
  Background node1({script, "sh", "-c", dump}, env1);
  auto env0 = common;
  env0["NODE_RANK"] = "0";
  auto r0 = run({script, "sh", "-c", dump}, env0, 120s);
  auto r1 = node1.wait(60s);
  INFO(r0.err << r1.err);
  CHECK(r0.exit_code == 0);
  CHECK(r1.exit_code == 0);
  auto envs = read_envs(dir, 4);
  CHECK(envs.size() == 4);
  CHECK(envs[3]["GROUP_RANK"] == "1");
  CHECK(envs[3]["WORLD_SIZE"] == "4");
  auto bad = run({script, "--nnodes", "2", "true"}, {{"MASTER_ADDR", ""}, {"DDP_LAUNCH", launcher_path()}});
  CHECK(bad.exit_code == 121);
  CHECK_THAT(bad.err, Catch::Contains("MASTER_ADDR"));
}

TEST_CASE("under srun each launcher takes its node rank and the master from Slurm's variables") {
  TempDir dir;
  int port = free_port();
  std::string dump = "env > " + dir.path() + "/env.$RANK";
  std::vector<std::string> cmd = {launcher_path(), "--nproc-per-node=1", "--master-port=" + std::to_string(port),
                                  "--rdzv-conf=join_timeout=60", "sh", "-c", dump};
  EnvOverrides slurm{{"SLURM_NNODES", "2"}, {"SLURM_JOB_NODELIST", "localhost,otherhost"}};
  auto env1 = slurm;
  env1["SLURM_NODEID"] = "1";
  Background node1(cmd, env1);
  auto env0 = slurm;
  env0["SLURM_NODEID"] = "0";
  auto r0 = run(cmd, env0, 120s);
  auto r1 = node1.wait(60s);
  INFO(r0.err << r1.err);
  CHECK(r0.exit_code == 0);
  CHECK(r1.exit_code == 0);
  auto envs = read_envs(dir, 2);
  REQUIRE(envs.size() == 2);
  CHECK(envs[1]["GROUP_RANK"] == "1");
  CHECK(envs[1]["MASTER_ADDR"] == "localhost");
}
