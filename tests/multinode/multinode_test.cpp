// Several launchers on one machine (loopback) forming one job: they agree on ranks and
// the workers' store, fail together, restart together, and notice a lost peer.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> static_node(int nnodes, int node_rank, int port, int nproc,
                                     const std::string& conf = "join_timeout=60") {
  return {launcher_path(),
          "--nnodes=" + std::to_string(nnodes),
          "--node-rank=" + std::to_string(node_rank),
          "--nproc-per-node=" + std::to_string(nproc),
          "--master-addr=127.0.0.1",
          "--master-port=" + std::to_string(port),
          "--rdzv-conf=" + conf};
}

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// One of two nodes with one worker each: static (node 0 hosts the store) or c10d (the
// node with is_host=1, node 0 here, hosts it).
std::vector<std::string> two_node_launcher(const std::string& backend, int node_rank, int port) {
  if (backend == "static") return static_node(2, node_rank, port, 1);
  return {launcher_path(),       "--nnodes=2",
          "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:" + std::to_string(port),
          "--rdzv-id=job",       "--node-rank=" + std::to_string(node_rank),
          "--nproc-per-node=1",  "--rdzv-conf=join_timeout=60,is_host=" + std::string(node_rank == 0 ? "1" : "0")};
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

// Both workers wrote DIR/pid.RANK (`echo $$ > ...`): complete lines, not a file the shell
// has created but not yet written (a worker killed right then would leave it empty).
bool pids_written(const TempDir& dir) {
  for (const char* f : {"pid.0", "pid.1"}) {
    if (!file_exists(dir / f)) return false;
    const std::string text = read_file(dir / f);
    if (text.empty() || text.back() != '\n') return false;
  }
  return true;
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
  std::vector<std::string> common = {launcher_path(),
                                     "--nnodes=3",
                                     "--rdzv-backend=c10d",
                                     "--rdzv-endpoint=127.0.0.1:" + std::to_string(port),
                                     "--rdzv-id=dyn",
                                     "--nproc-per-node=1",
                                     "--rdzv-conf=join_timeout=60"};
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
  std::vector<std::string> common = {launcher_path(),       "--nnodes=2:3",
                                     "--rdzv-backend=c10d", "--rdzv-endpoint=127.0.0.1:" + std::to_string(port),
                                     "--nproc-per-node=1",  "--rdzv-conf=join_timeout=60,last_call_timeout=0.5"};
  // Workers run until a world of 3 has formed, then finish.
  std::string script = "echo $WORLD_SIZE >> " + dir.path() +
                       "/worlds.$GROUP_RANK; "
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
  Background node1(
      with(static_node(2, 1, port, 2), {"sh", "-c", "if [ $RANK = 3 ]; then sleep 0.5; exit 3; fi; sleep 60"}));
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
  std::string script = "echo $TORCHELASTIC_RESTART_COUNT >> " + dir.path() +
                       "/count.$RANK; "
                       "if [ $RANK = 2 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then "
                       "while [ ! -s " +
                       dir.path() + "/count.0 ] || [ ! -s " + dir.path() +
                       "/count.1 ]; do sleep 0.02; done; "
                       "exit 5; fi; sleep 0.3";
  Background node1(with(static_node(2, 1, port, 1), {"--max-restarts=2", "sh", "-c", script}));
  auto r0 = run(with(static_node(2, 0, port, 2), {"--max-restarts=2", "sh", "-c", script}), {}, 120s);
  auto r1 = node1.wait(60s);
  INFO(r0.err << r1.err);
  CHECK(r0.exit_code == 0);
  CHECK(r1.exit_code == 0);
  for (int rank = 0; rank < 3; ++rank) CHECK(read_file(dir / ("count." + std::to_string(rank))) == "0\n1\n");
}

// --snapshot-persist-dir on both nodes: each launcher writes its own local rank 0's snapshot
// when a worker fails on either node (node 0 learns of it from the round's record) and at the end.
TEST_CASE("snapshot persist: each node writes its own rank's snapshot on a failure elsewhere and at the end") {
  TempDir dir, shm0, shm1;
  const int port = free_port();
  const std::string python_dir = std::string(DDP_SOURCE_DIR) + "/python";
  const std::string body =
      "import os, sys, time; sys.path.insert(0, sys.argv[1]); import ddp_snapshot as s\n"
      "d, out, rank = sys.argv[2], sys.argv[3], os.environ['RANK']\n"
      "if os.environ['TORCHELASTIC_RESTART_COUNT'] == '0':\n"
      "    s.save_bytes(7, b'rank %s step 7' % rank.encode()); open(out + '/saved.' + rank, 'w').close()\n"
      "    if rank == '1':\n"
      "        while not os.path.exists(out + '/saved.0'): time.sleep(0.02)\n"
      "        sys.exit(3)\n"
      "    time.sleep(60)\n"
      "while not os.path.exists(d + '/ckpt_000000007.pt'): time.sleep(0.02)\n"
      "s.save_bytes(8, b'rank %s step 8' % rank.encode())\n";
  auto node = [&](int rank) {
    const std::string persist = dir / ("persist." + std::to_string(rank));
    return with(static_node(2, rank, port, 1),
                {"--max-restarts=1", "--snapshot-persist-dir", persist, "--snapshot-persist-interval=0", "--no-python",
                 "python3", "-c", body, python_dir, persist, dir.path()});
  };
  Background node1(node(1), {{"DDP_LAUNCH_SNAPSHOT_DIR", shm1.path()}});
  auto r0 = run(node(0), {{"DDP_LAUNCH_SNAPSHOT_DIR", shm0.path()}}, 120s);
  auto r1 = node1.wait(60s);
  INFO(r0.err << r1.err);
  CHECK(r0.exit_code == 0);
  CHECK(r1.exit_code == 0);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string persist = dir / ("persist." + std::to_string(rank));
    CHECK(read_file(persist + "/ckpt_000000008.pt") == "rank " + std::to_string(rank) + " step 8");
    CHECK(!file_exists(persist + "/ckpt_000000007.pt"));  // ours, replaced by the newer one
    const std::string& err = rank == 0 ? r0.err : r1.err;
    CHECK(count_matching(err, "wrote the in-memory snapshot of step 7 to " + persist) == 1);
    CHECK(count_matching(err, "wrote the in-memory snapshot of step 8 to " + persist) == 1);
  }
}

// Both nodes log the restart's timeline: node 1 saw its worker fail, node 0 learnt of it from
// the round's record; each prints the recovered line once, with the first step.
TEST_CASE("a restart's recovery timeline on both nodes: the phases in order, one recovered line each") {
  TempDir dir, logs0, logs1;
  write_file(dir / "worker.py", R"(
import os, sys, time
sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_progress as p
if os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
    if os.environ["RANK"] == "1":
        time.sleep(0.5)
        sys.exit(3)
    time.sleep(60)
for step in range(1, 4):
    time.sleep(0.05)
    p.heartbeat(step)
)");
  const EnvOverrides env = {{"DDP_TEST_PYTHON_DIR", std::string(DDP_SOURCE_DIR) + "/python"}};
  const int port = free_port();
  // Cold restarts: with warm ones a standby is ready only if attempt 0 outlives the standby
  // delay, which a loaded machine decides (then the line says "warm"; both are right).
  auto node = [&](int rank, const TempDir& logs) {
    return with(static_node(2, rank, port, 1),
                {"--max-restarts=1", "--no-warm-restarts", "--log-dir", logs.path(), dir / "worker.py"});
  };
  Background node1(node(1, logs1), env);
  auto r0 = run(node(0, logs0), env, 120s);
  auto r1 = node1.wait(60s);
  INFO("node 0:\n" << r0.err << "node 1:\n" << r1.err);
  REQUIRE(r0.exit_code == 0);
  REQUIRE(r1.exit_code == 0);
  for (const auto* r : {&r0, &r1}) {
    CHECK_THAT(r->err, Catch::Matches("(.|\\n)*ddp-launch: recovered in [0-9.]+ s \\(stop [0-9.]+, start [0-9.]+ "
                                      "cold, store [0-9.]+, first step [0-9.]+\\)\n(.|\\n)*"));
    CHECK(r->err.find("recovered in") == r->err.rfind("recovered in"));
  }
  for (const TempDir* logs : {&logs0, &logs1}) {
    std::vector<nlohmann::json> timeline;
    for (const auto& e : std::filesystem::directory_iterator(logs->path())) {
      std::istringstream in(read_file(e.path().string() + "/events.jsonl"));
      for (std::string line; std::getline(in, line);)
        if (auto j = nlohmann::json::parse(line); j.at("event") == "recovery") timeline.push_back(j);
    }
    INFO(nlohmann::json(timeline).dump(1));
    std::vector<std::string> phases;
    for (const auto& e : timeline) phases.push_back(e.at("phase"));
    CHECK(phases == std::vector<std::string>{"failure_seen", "workers_stopped", "rendezvous_done", "workers_started",
                                             "first_step", "summary"});
    double since = 0;
    for (size_t i = 0; i + 1 < timeline.size(); ++i) {
      CHECK(timeline[i].at("attempt") == 1);
      CHECK(timeline[i].at("since_failure_s").get<double>() >= since);
      since = timeline[i].at("since_failure_s").get<double>();
    }
    if (timeline.empty()) continue;
    const auto& s = timeline.back();
    CHECK(s.at("recovered") == true);
    CHECK(s.at("total_s").get<double>() == Approx(s.at("stop_s").get<double>() + s.at("store_s").get<double>() +
                                                  s.at("start_s").get<double>() + s.at("first_step_s").get<double>())
                                               .margin(1e-5));
  }
}

TEST_CASE("a worker failure on the store's host or on a follower ends every node with its code") {
  const std::string backend = GENERATE(as<std::string>{}, "static", "c10d");
  const int failing = GENERATE(0, 1);  // node 0 hosts the agent store
  INFO(backend << " backend, the worker on node " << failing << " fails");
  TempDir dir;
  const int port = free_port();
  // Both workers up, then the failing one exits 3; the other would sleep for a minute.
  const std::string script = "touch " + dir.path() + "/up.$RANK; if [ $RANK = " + std::to_string(failing) +
                             " ]; then while [ ! -e " + dir.path() + "/up." + std::to_string(1 - failing) +
                             " ]; do sleep 0.02; done; echo \"rank $RANK exits 3\" >&2; exit 3; fi; exec sleep 60";
  Background node1(with(two_node_launcher(backend, 1, port), {"sh", "-c", script}));
  auto r0 = run(with(two_node_launcher(backend, 0, port), {"sh", "-c", script}), {}, 120s);
  auto r1 = node1.wait(60s);
  INFO("node 0:\n" << r0.err << "node 1:\n" << r1.err);
  CHECK(r0.exit_code == 3);
  CHECK(r1.exit_code == 3);
  const RunResult& own = failing == 0 ? r0 : r1;
  const RunResult& other = failing == 0 ? r1 : r0;
  const std::string rank_line = "rank      : " + std::to_string(failing) + " (local_rank: 0)";
  CHECK_THAT(own.err, Catch::Contains("Root cause") && Catch::Contains(rank_line) &&
                          Catch::Contains("rank " + std::to_string(failing) + " exits 3"));
  CHECK_THAT(other.err, Catch::Contains("FAILED on node " + std::to_string(failing)) && Catch::Contains(rank_line) &&
                            Catch::Contains("exit code 3"));
  CHECK_THAT(r0.err + r1.err, !Catch::Contains("lost"));
}

TEST_CASE("every node copies the job's root cause to its launcher's TORCHELASTIC_ERROR_FILE") {
  const int failing = GENERATE(0, 1);
  INFO("the worker on node " << failing << " fails");
  TempDir dir;
  const int port = free_port();
  // The failing worker records its error with @record's JSON, as a Python worker would.
  const std::string script = "touch " + dir.path() + "/up.$RANK; if [ $RANK = " + std::to_string(failing) +
                             " ]; then while [ ! -e " + dir.path() + "/up." + std::to_string(1 - failing) +
                             " ]; do sleep 0.02; done; printf '%s' '{\"message\": {\"message\": \"ValueError: "
                             "bad rate\", \"extraInfo\": {\"py_callstack\": \"Traceback\", \"timestamp\": "
                             "\"1\"}}}' > \"$TORCHELASTIC_ERROR_FILE\"; exit 3; fi; exec sleep 60";
  Background node1(with(two_node_launcher("static", 1, port), {"sh", "-c", script}),
                   {{"TORCHELASTIC_ERROR_FILE", dir / "launcher1.json"}});
  auto r0 = run(with(two_node_launcher("static", 0, port), {"sh", "-c", script}),
                {{"TORCHELASTIC_ERROR_FILE", dir / "launcher0.json"}}, 120s);
  auto r1 = node1.wait(60s);
  INFO("node 0:\n" << r0.err << "node 1:\n" << r1.err);
  REQUIRE(r0.exit_code == 3);
  REQUIRE(r1.exit_code == 3);
  for (const char* file : {"launcher0.json", "launcher1.json"}) {
    INFO(file);
    REQUIRE(file_exists(dir / file));
    const auto record = nlohmann::json::parse(read_file(dir / file));
    CHECK(record.at("message").at("errorCode") == 3);
    CHECK(record.at("message").at("message") == "ValueError: bad rate");
    CHECK(record.at("message").at("extraInfo").at("py_callstack") == "Traceback");
  }
}

TEST_CASE("a stop signal to either node's launcher stops every node with the signal as root cause") {
  const int victim = GENERATE(0, 1);  // node 0 hosts the agent store
  const int sig = GENERATE(SIGTERM, SIGINT);
  INFO("node " << victim << "'s launcher gets signal " << sig);
  TempDir dir;
  const int port = free_port();
  const std::string script = "echo $$ > " + dir.path() + "/pid.$RANK; exec sleep 300";
  Background node0(with(static_node(2, 0, port, 1), {"sh", "-c", script}));
  Background node1(with(static_node(2, 1, port, 1), {"sh", "-c", script}));
  REQUIRE(wait_until([&] { return pids_written(dir); }, 60s));
  (victim == 0 ? node0 : node1).signal(sig);
  auto r0 = node0.wait(60s);
  auto r1 = node1.wait(60s);
  INFO("node 0:\n" << r0.err << "node 1:\n" << r1.err);
  CHECK(r0.exit_code == 128 + sig);
  CHECK(r1.exit_code == 128 + sig);
  const std::string name = sig == SIGTERM ? "SIGTERM" : "SIGINT";
  CHECK_THAT(victim == 0 ? r0.err : r1.err, Catch::Contains("stopped by " + name));
  CHECK_THAT(victim == 0 ? r1.err : r0.err,
             Catch::Contains("node " + std::to_string(victim) + " (") && Catch::Contains("was stopped by " + name));
  CHECK_THAT(r0.err + r1.err, !Catch::Contains("lost"));
  CHECK_FALSE(process_alive(std::stoi(read_file(dir / "pid.0"))));
  CHECK_FALSE(process_alive(std::stoi(read_file(dir / "pid.1"))));
}

// The gap a round's record leaves: node 1's worker fails with a restart left, so round 0
// records a restart; node 0's worker takes its time to stop (it waits for `go`). A stop
// signal now, to node 0 (still stopping) or to node 1 (already in the next rendezvous),
// cannot be round 0's record; the job's stop record carries it: both exit 143, nobody
// restarts, and the other names the signalled node.
TEST_CASE("a stop signal after a restart was recorded still stops every node") {
  const int victim = GENERATE(0, 1);
  INFO("node " << victim << "'s launcher gets SIGTERM");
  TempDir dir;
  const int port = free_port();
  const std::string d = dir.path();
  const std::string script = "echo $$ > " + d +
                             "/pid.$RANK.$TORCHELASTIC_RESTART_COUNT; "
                             "if [ $RANK = 1 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then "
                             "while [ ! -e " +
                             d +
                             "/pid.0.0 ]; do sleep 0.02; done; exit 3; fi; "
                             "trap 'touch " +
                             d + "/term.$RANK; trap \"\" TERM; while [ ! -e " + d +
                             "/go ]; do sleep 0.05; done; exit 0' TERM; "
                             "sleep 300 & wait";
  Background node0(with(static_node(2, 0, port, 1), {"--max-restarts=1", "sh", "-c", script}));
  Background node1(with(static_node(2, 1, port, 1), {"--max-restarts=1", "sh", "-c", script}));
  REQUIRE(wait_until([&] { return file_exists(dir / "term.0"); }, 60s));  // node 0 stops for the restart
  Background& signalled = victim == 0 ? node0 : node1;
  signalled.signal(SIGTERM);
  REQUIRE(wait_until([&] { return signalled.err_so_far().find("SIGTERM") != std::string::npos; }, 30s));
  write_file(dir / "go", "");
  auto r0 = node0.wait(60s);
  auto r1 = node1.wait(60s);
  INFO("node 0:\n" << r0.err << "node 1:\n" << r1.err);
  CHECK(r0.exit_code == 128 + SIGTERM);
  CHECK(r1.exit_code == 128 + SIGTERM);
  CHECK_THAT(victim == 0 ? r1.err : r0.err,
             Catch::Contains("node " + std::to_string(victim) + " (") && Catch::Contains("was stopped by SIGTERM"));
  CHECK_THAT(r0.err + r1.err, !Catch::Contains("lost") && !Catch::Contains("timed out"));
  CHECK_FALSE(file_exists(dir / "pid.0.1"));  // nobody restarted
  CHECK_FALSE(file_exists(dir / "pid.1.1"));
}

// Two nodes with one worker each; SIGKILL node `victim`'s launcher. The survivor must stop
// its worker and exit 124 with every one of `messages` in its report. With `comm_error`
// the survivor's worker notices its peer's death first (as a gloo or NCCL worker would) and
// fails with gloo's "Connection closed by peer": a symptom, the lost node stays the cause.
// (Heartbeats every 5 s there, so that the worker, polling every 10 ms, is first.)
static void kill_one_node(int victim, const std::vector<std::string>& messages, bool comm_error = false) {
  TempDir dir;
  int port = free_port();
  std::string script = "echo $$ > " + dir.path() + "/pid.$RANK; sleep 300";
  std::string conf = "join_timeout=60";
  if (comm_error) {
    script = "echo $$ > " + dir.path() +
             "/pid.$RANK; "
             "while [ ! -s " +
             dir.path() +
             "/victim ]; do sleep 0.01; done; "
             "while kill -0 $(cat " +
             dir.path() +
             "/victim) 2>/dev/null; do sleep 0.01; done; "
             "echo 'RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
             "[127.0.0.1]:40000' >&2; exit 1";
    conf += ",heartbeat_interval=5,heartbeat_timeout=10";
  }
  Background node0(with(static_node(2, 0, port, 1, conf), {"sh", "-c", script}));
  Background node1(with(static_node(2, 1, port, 1, conf), {"sh", "-c", script}));
  REQUIRE(wait_until([&] { return pids_written(dir); }, 60s));
  const int survivor = 1 - victim;
  pid_t survivor_worker = std::stoi(read_file(dir / ("pid." + std::to_string(survivor))));
  Background& killed = victim == 0 ? node0 : node1;
  write_file(dir / "victim", std::to_string(killed.pid()));
  killed.signal(SIGKILL);
  killed.wait(30s);  // reaped: `kill -0` in the survivor's worker sees it gone
  auto r = (survivor == 0 ? node0 : node1).wait(60s);
  INFO(r.err);
  CHECK(r.exit_code == 124);
  for (const auto& m : messages) CHECK_THAT(r.err, Catch::Contains(m));
  CHECK_FALSE(process_alive(survivor_worker));
}

TEST_CASE("a SIGKILLed launcher is noticed by the other node, which stops its workers") {
  kill_one_node(1, {"node 1 (", "was lost"});
}

TEST_CASE("the leader's death stops the followers") { kill_one_node(0, {"lost the agent store"}); }

TEST_CASE("a killed launcher is the root cause, not the survivor's worker's communication error") {
  const int victim = GENERATE(0, 1);
  if (victim == 1) kill_one_node(1, {"node 1 (", "was lost", "a symptom of"}, true);
  else kill_one_node(0, {"lost the agent store", "a symptom of"}, true);
}

// Hangs across nodes: torch-free Python workers feed heartbeats through
// python/ddp_progress.py; the one on node $HUNG stops itself (SIGSTOP) after three steps
// (on every attempt, or only the first with MODE=once), the other keeps stepping. The node
// that detects the hang captures its worker's stacks; every node reports the verdict.
const char* const kHangWorker = R"(
import os, signal, sys, time
sys.path.insert(0, os.environ["DDP_TEST_PYTHON_DIR"])
import ddp_progress as p
rank, restart = int(os.environ["RANK"]), int(os.environ["TORCHELASTIC_RESTART_COUNT"])
with open(os.path.join(os.environ["DIR"], "pid.%d" % rank), "w") as f:
    f.write("%d\n" % os.getpid())
for step in range(1, 4):
    p.heartbeat(step)
if os.environ["MODE"] == "once" and restart > 0:
    sys.exit(0)
if rank == int(os.environ["HUNG"]):
    os.kill(os.getpid(), signal.SIGSTOP)
step = 3
while True:
    step += 1
    p.heartbeat(step)
    time.sleep(0.2)
)";

struct MultiNodeHang {
  TempDir dir, logs0, logs1;
  RunResult r0, r1;

  MultiNodeHang(int hung, const std::string& mode, const std::string& max_restarts) {
    write_file(dir / "worker.py", kHangWorker);
    const EnvOverrides env{{"PYTHON_EXEC", "/usr/bin/python3"},
                           {"DIR", dir.path()},
                           {"MODE", mode},
                           {"HUNG", std::to_string(hung)},
                           {"DDP_TEST_PYTHON_DIR", std::string(DDP_SOURCE_DIR) + "/python"}};
    const int port = free_port();
    auto node = [&](int rank, const TempDir& logs) {
      return with(static_node(2, rank, port, 1),
                  {"--hang-timeout=3", "--max-restarts=" + max_restarts, "--log-dir", logs.path(), dir / "worker.py"});
    };
    Background node1(node(1, logs1), env);
    r0 = run(node(0, logs0), env, 120s);
    r1 = node1.wait(60s);
  }
  // The lines of node `node`'s events.jsonl.
  std::vector<std::string> events(int node) const {
    std::vector<std::string> lines;
    for (const auto& e : std::filesystem::directory_iterator((node == 0 ? logs0 : logs1).path())) {
      std::istringstream in(read_file(e.path().string() + "/events.jsonl"));
      for (std::string line; std::getline(in, line);) lines.push_back(line);
    }
    return lines;
  }
  // The stacks file of node `node`'s worker in attempt `attempt` ("" if none).
  std::string stacks(int node, int attempt) const {
    for (const auto& e : std::filesystem::directory_iterator((node == 0 ? logs0 : logs1).path())) {
      const std::string path = e.path().string() + "/attempt_" + std::to_string(attempt) + "/0/stacks.txt";
      if (file_exists(path)) return read_file(path);
    }
    return "";
  }
};

TEST_CASE("two nodes: a failure, a stop and a lost node leave no process of the job on either node") {
  // Each worker starts a helper for every way of escaping (tests/support/escaping_worker.sh).
  const std::string how = GENERATE(as<std::string>{}, "failure", "stop", "lost node");
  INFO(how);
  TempDir dir;
  const int port = free_port();
  const EnvOverrides marked{{"DDP_TEST_ESCAPE_MARK", dir.path()}};
  const std::vector<std::string> worker{std::string(DDP_SOURCE_DIR) + "/tests/support/escaping_worker.sh", dir.path(),
                                        how == "failure" ? "exit3" : "wait"};
  Background n0(with(with(static_node(2, 0, port, 1), {"--shutdown-timeout=1"}), worker), marked);
  Background n1(with(with(static_node(2, 1, port, 1), {"--shutdown-timeout=1"}), worker), marked);
  REQUIRE(wait_until([&] { return file_exists(dir / "up.0.0") && file_exists(dir / "up.1.0"); }, 60s));
  if (how == "stop") n0.signal(SIGTERM);
  if (how == "lost node") n1.signal(SIGKILL);
  const RunResult r1 = n1.wait(60s);
  const RunResult r0 = n0.wait(60s);
  INFO(r0.err << r1.err);
  if (how == "failure") CHECK((r0.exit_code == 3 && r1.exit_code == 3));
  if (how == "stop") CHECK((r0.exit_code == 128 + SIGTERM && r1.exit_code == 128 + SIGTERM));
  if (how == "lost node") CHECK((r0.exit_code == 124 && r1.exit_code == 128 + SIGKILL));
  // The lost node's helpers are its watchdog's to end: not at once.
  CHECK(wait_until([&] { return processes_with_env("DDP_TEST_ESCAPE_MARK=" + dir.path()).empty(); }, 15s));
  for (const char* kind : {"setsid", "doublefork", "pgroup", "nohup", "session", "stopped"})
    for (const char* tag : {".0.0", ".1.0"}) {
      const std::string text = read_file(dir / (kind + std::string(tag)));
      REQUIRE_FALSE(text.empty());
      CHECK_FALSE(process_alive(std::stoi(text)));
    }
}

TEST_CASE("a hang on either node is the root cause on every node: both report it and exit 119") {
  const int hung = GENERATE(0, 1);  // node 0 hosts the agent store
  MultiNodeHang run(hung, "always", "0");
  INFO("node 0:\n" << run.r0.err << "node 1:\n" << run.r1.err);
  CHECK(run.r0.exit_code == 119);
  CHECK(run.r1.exit_code == 119);
  const std::string verdict = "hang: no progress for ";
  const std::string culprit = "rank " + std::to_string(hung) + " (pid ";
  const RunResult& own = hung == 0 ? run.r0 : run.r1;
  const RunResult& other = hung == 0 ? run.r1 : run.r0;
  CHECK_THAT(own.err, Catch::Contains("Root cause") && Catch::Contains(verdict) && Catch::Contains(culprit) &&
                          Catch::Contains("a hang (exit code 119)"));
  CHECK_THAT(other.err, Catch::Contains("FAILED on node " + std::to_string(hung)) &&
                            Catch::Contains("node      : " + std::to_string(hung) + " (") &&
                            Catch::Contains("hang      : " + verdict) && Catch::Contains(culprit) &&
                            Catch::Contains("attempt_0/0/stacks.txt on node " + std::to_string(hung)) &&
                            Catch::Contains("a hang (exit code 119)"));
  CHECK_FALSE(run.stacks(hung, 0).empty());  // captured where the hang was detected
  // ... and on the other node, when it learnt of the hang from the abort record: native
  // frames, then the Python traceback (faulthandler) of the worker that kept stepping.
  const std::string other_stacks = run.stacks(1 - hung, 0);
  CHECK_THAT(other_stacks, Catch::Contains("== native stacks of rank " + std::to_string(1 - hung)) &&
                               Catch::Contains("#0 ") && Catch::Contains("worker.py"));
  CHECK_THAT(other.err, Catch::Contains("attempt_0/0/stacks.txt"));  // its own, named in its output
  for (int rank = 0; rank < 2; ++rank) {
    const std::string pid = read_file(run.dir / ("pid." + std::to_string(rank)));
    CHECK_FALSE(process_alive(std::stoi(pid)));  // every node's worker was stopped
  }
}

TEST_CASE("a hang on one node restarts every node under --max-restarts") {
  MultiNodeHang run(1, "once", "1");
  INFO("node 0:\n" << run.r0.err << "node 1:\n" << run.r1.err);
  CHECK(run.r0.exit_code == 0);
  CHECK(run.r1.exit_code == 0);
  CHECK_THAT(run.r0.err, Catch::Contains("node 1 (") && Catch::Contains("detected a hang: no progress") &&
                             Catch::Contains("restarting on every node"));
  CHECK_THAT(run.r1.err, Catch::Contains("detected a hang: no progress") && Catch::Contains("restarting"));
  // Both nodes' events.jsonl: round 0, the hang on node 1 (as every node read it; node 1's
  // strike), the restart, round 1, the finish (standby events, whose timing varies, are warm restarts':
  // tests/warm).
  for (int node : {0, 1}) {
    std::vector<std::string> seq;
    for (const std::string& line : run.events(node)) {
      const auto e = nlohmann::json::parse(line);
      CHECK(e.at("node") == node);
      const std::string name = e.at("event");
      if (name == "worker_exit" || name == "recovery" || name == "standby") continue;  // their own tests
      seq.push_back(name + (name == "rendezvous" ? std::to_string(e.at("round").get<int>()) : "") +
                    (name == "failure" ? ":" + e.at("kind").get<std::string>() : ""));
      if (name == "failure") CHECK(e.at("node_rank") == 1);
    }
    // The node whose worker hung takes a strike (docs/preflight.md "Strikes").
    std::vector<std::string> expected{"start",       "rendezvous0", "failure:hang", "restart",
                                      "rendezvous1", "goodput",     "finish"};
    if (node == 1) expected.insert(expected.begin() + 3, "strike");
    CHECK(seq == expected);
  }
}

// Real gloo workers (tests/multinode/allreduce.py all-reducing for 30 s) on two nodes; one
// launcher is SIGKILLed mid-job. The survivor's worker then fails with gloo's "Connection
// closed by peer" (or the heartbeat notices first): either way the survivor exits 124
// naming the lost node or store, and leaves no worker. Hidden ([.gloo]): CTest runs it
// through run_gloo_cases.sh, which skips it (code 77) without a Python with torch; the
// interpreter comes in DDP_TEST_PYTHON.
TEST_CASE("gloo workers: a killed launcher is the root cause, not the survivor's lost connection", "[.gloo]") {
  const char* python = std::getenv("DDP_TEST_PYTHON");
  REQUIRE(python != nullptr);
  const std::string backend = GENERATE(as<std::string>{}, "static", "c10d");
  const int victim = GENERATE(0, 1);  // node 0 hosts the agent store
  INFO(backend << " backend, node " << victim << "'s launcher is killed");
  TempDir dir;
  const int port = free_port();
  const EnvOverrides env{{"PYTHON_EXEC", python}, {"GLOO_SOCKET_IFNAME", "lo"}, {"OMP_NUM_THREADS", "1"}};
  const std::vector<std::string> job = {std::string(DDP_SOURCE_DIR) + "/tests/multinode/allreduce.py", "--hold", "30",
                                        "--ready", dir.path() + "/ready"};
  Background node0(with(two_node_launcher(backend, 0, port), job), env);
  Background node1(with(two_node_launcher(backend, 1, port), job), env);
  REQUIRE(wait_until([&] { return file_exists(dir / "ready.0") && file_exists(dir / "ready.1"); }, 120s));
  const int survivor = 1 - victim;
  const pid_t survivor_worker = std::stoi(read_file(dir / ("ready." + std::to_string(survivor))));
  Background& killed = victim == 0 ? node0 : node1;
  killed.signal(SIGKILL);
  killed.wait(30s);
  const RunResult r = (survivor == 0 ? node0 : node1).wait(90s);
  INFO(r.err);
  CHECK(r.exit_code == 124);
  if (victim == 1) CHECK_THAT(r.err, Catch::Contains("node 1 (") && Catch::Contains("was lost"));
  else CHECK_THAT(r.err, Catch::Contains("lost the agent store"));
  // The survivor never reports its own worker as the root cause (that report has a rank line).
  CHECK_THAT(r.err, !Catch::Contains("rank      : "));
  CHECK(wait_until([&] { return !process_alive(survivor_worker); }, 10s));
}

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

// A node started before the store's host waits for it (up to the join timeout), and a stop
// signal meanwhile ends that wait at once, as it ends every other.
TEST_CASE("a stop signal while a node waits for the rendezvous store ends the wait at once") {
  const std::string backend = GENERATE(as<std::string>{}, "static", "c10d");
  const int sig = GENERATE(SIGTERM, SIGINT);
  INFO(backend << ", signal " << sig);
  Background follower(with(two_node_launcher(backend, 1, free_port()), {"true"}));
  REQUIRE(wait_until([&] { return follower.err_so_far().find("containment") != std::string::npos; }, 30s));
  std::this_thread::sleep_for(500ms);  // into the connect's retries
  follower.signal(sig);
  const RunResult r = follower.wait(20s);
  INFO(r.err);
  CHECK(r.exit_code == 128 + sig);
  CHECK_THAT(r.err, Catch::Contains(std::string("stopped by ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") +
                                    " while waiting for the rendezvous store: 127.0.0.1:") &&
                        Catch::Contains("Connection refused"));
}

// Two launchers that bind --rdzv-endpoint at the same moment may both find the port taken
// (Linux checks a listener's port only after marking it listening), and neither hosted the
// store: both waited for nobody until the join timeout. Held here: a socket bound to the port,
// never listening, closed after a second, as the other racer's failed bind closes its own.
TEST_CASE("c10d: a port taken here while nobody listens there is hosted once it is free, by one launcher") {
  const int held = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // not the launchers' to keep
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(held, reinterpret_cast<sockaddr*>(&at), sizeof at) == 0);
  socklen_t len = sizeof at;
  REQUIRE(::getsockname(held, reinterpret_cast<sockaddr*>(&at), &len) == 0);
  const std::string port = std::to_string(ntohs(at.sin_port));
  const std::vector<std::string> node{
      launcher_path(),  "--nnodes=2",         "--rdzv-backend=c10d",         "--rdzv-endpoint=127.0.0.1:" + port,
      "--rdzv-id=held", "--nproc-per-node=1", "--rdzv-conf=join_timeout=60", "true"};
  Background a(node), b(node);
  std::this_thread::sleep_for(1s);
  ::close(held);
  const RunResult ra = a.wait(60s), rb = b.wait(60s);
  INFO("a:\n" << ra.err << "b:\n" << rb.err);
  CHECK(ra.exit_code == 0);
  CHECK(rb.exit_code == 0);
  const std::string hosting = "hosting the agent store at 127.0.0.1:" + port;
  CHECK((ra.err.find(hosting) != std::string::npos) != (rb.err.find(hosting) != std::string::npos));
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
  EnvOverrides common{
      {"NNODES", "2"},         {"MASTER_ADDR", "127.0.0.1"},    {"MASTER_PORT", std::to_string(port)},
      {"NPROC_PER_NODE", "2"}, {"DDP_LAUNCH", launcher_path()}, {"DDP_LAUNCH_ARGS", "--rdzv-conf=join_timeout=60"}};
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
  std::vector<std::string> cmd = {launcher_path(),
                                  "--nproc-per-node=1",
                                  "--master-port=" + std::to_string(port),
                                  "--rdzv-conf=join_timeout=60",
                                  "sh",
                                  "-c",
                                  dump};
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

namespace {

// kKillWithCommError: a killed launcher whose survivor's worker then fails with gloo's
// "Connection closed by peer" (or the heartbeat is first): the lost node stays the cause.
enum class Fault { kNone, kWorkerExit, kStopSignal, kKillLauncher, kKillWithCommError };
constexpr int kFaultKinds = 5;

struct SoakFigures {
  int runs = 0;
  int faults = 0;
  int correct = 0;
  std::vector<double> reactions;  // seconds from the fault to the last launcher's exit
};

// One short two-node job with one fault (or none) on node `node`; true when every node
// ended as the README says and no process of the job is left: each worker starts a helper for
// every way of escaping (tests/support/escaping_helpers.sh) first.
bool soak_run(const std::string& backend, Fault fault, int node, SoakFigures& figures) {
  TempDir dir;
  const int port = free_port();
  const std::string d = dir.path();
  const std::string helpers = ". " + std::string(DDP_SOURCE_DIR) + "/tests/support/escaping_helpers.sh; " +
                              "start_escaping_helpers " + d + " $RANK; ";
  const EnvOverrides marked{{"DDP_TEST_ESCAPE_MARK", d}};
  std::string script = "echo $$ > " + d + "/pid.$RANK; " +
                       (fault == Fault::kNone ? std::string("sleep 0.3")
                                              : "while [ ! -e " + d + "/fail.$RANK ]; do sleep 0.01; done; exit 3");
  if (fault == Fault::kKillWithCommError)
    script = "echo $$ > " + d + "/pid.$RANK; while [ ! -s " + d +
             "/victim ]; do sleep 0.01; done; "
             "while kill -0 $(cat " +
             d +
             "/victim) 2>/dev/null; do sleep 0.01; done; "
             "echo 'RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer "
             "[127.0.0.1]:40000' >&2; exit 1";
  script = helpers + script;
  Background n0(with(two_node_launcher(backend, 0, port), {"--shutdown-timeout=1", "sh", "-c", script}), marked);
  Background n1(with(two_node_launcher(backend, 1, port), {"--shutdown-timeout=1", "sh", "-c", script}), marked);
  if (!wait_until([&] { return pids_written(dir); }, 60s)) {
    UNSCOPED_INFO(backend << ": the workers did not start within 60 s\nnode 0:\n"
                          << n0.err_so_far() << "node 1:\n"
                          << n1.err_so_far());
    return false;
  }
  const auto start = std::chrono::steady_clock::now();
  Background& target = node == 0 ? n0 : n1;
  if (fault == Fault::kWorkerExit) write_file(dir / ("fail." + std::to_string(node)), "");
  if (fault == Fault::kStopSignal) target.signal(SIGTERM);
  if (fault == Fault::kKillLauncher || fault == Fault::kKillWithCommError) {
    write_file(dir / "victim", std::to_string(target.pid()));
    target.signal(SIGKILL);
  }
  // The target first: a killed launcher reaped at once (`kill -0` in the survivor's worker).
  const RunResult rt = target.wait(60s);
  const RunResult ro = (node == 0 ? n1 : n0).wait(60s);
  const RunResult& r0 = node == 0 ? rt : ro;
  const RunResult& r1 = node == 0 ? ro : rt;
  const double reaction = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const RunResult& other = node == 0 ? r1 : r0;
  const RunResult& own = node == 0 ? r0 : r1;
  const std::string at = "node " + std::to_string(node) + " (";
  bool ok = false;
  switch (fault) {
    case Fault::kNone: ok = r0.exit_code == 0 && r1.exit_code == 0; break;
    case Fault::kWorkerExit:
      ok = r0.exit_code == 3 && r1.exit_code == 3 && own.err.find("Root cause") != std::string::npos &&
           other.err.find("FAILED on node " + std::to_string(node)) != std::string::npos;
      break;
    case Fault::kStopSignal:
      ok = r0.exit_code == 128 + SIGTERM && r1.exit_code == 128 + SIGTERM &&
           other.err.find("was stopped by SIGTERM") != std::string::npos;
      break;
    case Fault::kKillLauncher:
    case Fault::kKillWithCommError:
      ok = own.exit_code == 128 + SIGKILL && other.exit_code == 124 &&
           (other.err.find(at) != std::string::npos || other.err.find("lost the agent store") != std::string::npos) &&
           other.err.find("rank      : ") == std::string::npos;  // no worker named as the root cause
      break;
  }
  const bool no_leftovers = wait_until(
      [&] {
        return !process_alive(std::stoi(read_file(dir / "pid.0"))) &&
               !process_alive(std::stoi(read_file(dir / "pid.1"))) &&
               processes_with_env("DDP_TEST_ESCAPE_MARK=" + d).empty();
      },
      15s);
  if (!(ok && no_leftovers))
    UNSCOPED_INFO(backend << " fault " << static_cast<int>(fault) << " on node " << node << ": exits " << r0.exit_code
                          << "/" << r1.exit_code << (no_leftovers ? "" : ", processes of the job left") << "\nnode 0:\n"
                          << r0.err << "node 1:\n"
                          << r1.err);
  ++figures.runs;
  if (fault != Fault::kNone) {
    ++figures.faults;
    figures.reactions.push_back(reaction);
  }
  if (ok && no_leftovers) ++figures.correct;
  return ok && no_leftovers;
}

}  // namespace

TEST_CASE("soak: random faults in short two-node jobs always end as the README says") {
  // Faults: none, a worker exit, a stop signal, a killed launcher, a killed launcher whose
  // survivor's worker fails with a communication error. Bounded: about 40 s (DDP_SOAK_SECONDS overrides). The seed is
  // printed to replay a run.
  const char* budget_env = std::getenv("DDP_SOAK_SECONDS");
  const double budget = budget_env ? std::atof(budget_env) : 40.0;
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  INFO("seed " << seed);
  SoakFigures figures;
  const auto start = std::chrono::steady_clock::now();
  int wrong = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < budget) {
    const std::string backend = rng() % 2 ? "static" : "c10d";
    const Fault fault = static_cast<Fault>(rng() % kFaultKinds);
    if (!soak_run(backend, fault, static_cast<int>(rng() % 2), figures)) ++wrong;
  }
  std::sort(figures.reactions.begin(), figures.reactions.end());
  const double median = figures.reactions.empty() ? 0 : figures.reactions[figures.reactions.size() / 2];
  const double max = figures.reactions.empty() ? 0 : figures.reactions.back();
  std::printf("soak (seed %u): %d runs, %d faults, %d correct endings, reaction median %.2f s, max %.2f s\n", seed,
              figures.runs, figures.faults, figures.correct, median, max);
  CHECK(figures.runs >= 4);
  CHECK(wrong == 0);
}

TEST_CASE("two roles: ROLE_RANK and ROLE_WORLD_SIZE count within each role") {
  TempDir dir;
  int port = free_port();
  std::string dump = "env > " + dir.path() + "/env.$RANK";
  Background node1(with(static_node(3, 1, port, 1), {"--role=evaluator", "sh", "-c", dump}));
  Background node2(with(static_node(3, 2, port, 2), {"--role=trainer", "sh", "-c", dump}));
  auto r0 = run(with(static_node(3, 0, port, 2), {"--role=trainer", "sh", "-c", dump}), {}, 120s);
  auto r1 = node1.wait(60s);
  auto r2 = node2.wait(60s);
  INFO(r0.err << r1.err << r2.err);
  REQUIRE(r0.exit_code == 0);
  REQUIRE(r1.exit_code == 0);
  REQUIRE(r2.exit_code == 0);
  auto envs = read_envs(dir, 5);
  REQUIRE(envs.size() == 5);  // ranks 0-1 trainer, 2 evaluator, 3-4 trainer
  const char* role[] = {"trainer", "trainer", "evaluator", "trainer", "trainer"};
  const char* role_rank[] = {"0", "1", "0", "2", "3"};
  for (int rank = 0; rank < 5; ++rank) {
    CHECK(envs[rank]["ROLE_NAME"] == role[rank]);
    CHECK(envs[rank]["ROLE_RANK"] == role_rank[rank]);
    CHECK(envs[rank]["ROLE_WORLD_SIZE"] == (rank == 2 ? "1" : "4"));
    CHECK(envs[rank]["WORLD_SIZE"] == "5");
  }
}
