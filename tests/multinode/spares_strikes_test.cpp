// Strikes and hot spares on several launchers on loopback (docs/preflight.md): a node whose own
// worker keeps being a round's root cause is struck out at --strikes COUNT (exit 117, the others
// finish without it); a node that comes when the job has its MAX nodes waits as a hot spare, takes
// the seat of a node whose launcher was SIGKILLed, and a spare the job never needed is released
// with the job's exit code when it ends.
#include <catch2/catch.hpp>

#include <csignal>

#include "tests/support/test_support.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// `host`: this launcher hosts the agent store (is_host=1); the others never race it for the port.
std::vector<std::string> launcher_args(const std::string& nnodes, int port, const std::string& id, int restarts,
                                       bool host) {
  return {launcher_path(),
          "--nnodes=" + nnodes,
          "--rdzv-backend=c10d",
          "--rdzv-endpoint=127.0.0.1:" + std::to_string(port),
          "--rdzv-id=" + id,
          "--nproc-per-node=1",
          "--max-restarts=" + std::to_string(restarts),
          std::string("--rdzv-conf=join_timeout=60,last_call_timeout=30,is_host=") + (host ? "1" : "0"),
          "--no-python"};
}

}  // namespace

TEST_CASE("strikes: a node whose worker fails 3 times is struck out with exit 117, the other two finish") {
  TempDir dir;
  const int port = free_port();
  const auto host = launcher_args("2:3", port, "strikes", 5, true),
             common = launcher_args("2:3", port, "strikes", 5, false);
  // Each worker writes its world size and restart count; the bad node's fails soon after.
  const std::string record = "echo $WORLD_SIZE $TORCHELASTIC_RESTART_COUNT > " + dir.path() + "/world.$RANK; ";
  Background a(with(host, {"--strikes=3/600", "sh", "-c", record + "sleep 5"}));
  Background b(with(common, {"--strikes=3/600", "sh", "-c", record + "sleep 5"}));
  const std::vector<std::string> failing = with(common, {"--strikes=3/600", "sh", "-c", record + "sleep 0.3; exit 3"});
  const EnvOverrides bad_node{{"DDP_LAUNCH_NODE_ID", "bad-node"}};
  const RunResult bad = run(failing, bad_node, 120s);
  // Its launcher started again (a pod restarted): it comes with its strikes, kept in the job's
  // store, and is turned away without restarting the two that run.
  const RunResult again = run(failing, bad_node, 60s);
  const RunResult ra = a.wait(90s), rb = b.wait(90s);
  INFO(ra.err << "\n---\n" << rb.err << "\n---\n" << bad.err << "\n---\n" << again.err);
  CHECK(ra.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(bad.exit_code == 117);
  CHECK_THAT(bad.err, Catch::Contains("strike 1 of 3 within 600 s for this node (crash)") &&
                          Catch::Contains("strike 3 of 3 within 600 s") &&
                          Catch::Contains("this node was left out of the job: node ") &&
                          Catch::Contains("struck out: its workers were the root cause 3 times within 600 s"));
  CHECK_THAT(ra.err + rb.err, Catch::Contains("left out node ") && Catch::Contains("struck out"));
  CHECK(again.exit_code == 117);
  CHECK_THAT(again.err,
             Catch::Contains("this node (DDP_LAUNCH_NODE_ID bad-node) comes with 3 strikes within 600 s kept "
                             "in the job's store") &&
                 Catch::Contains("the running job is not restarted for it, nor does it wait as a spare"));
  // The last round: two nodes, after three restarts.
  CHECK(read_file(dir.path() + "/world.0") == "2 3\n");
  CHECK(read_file(dir.path() + "/world.1") == "2 3\n");
}

TEST_CASE("hot spares: one takes a SIGKILLed node's seat, the other is released with the job's exit code") {
  // A third spare is SIGKILLed while it waits: the restart does not wait for it.
  TempDir dir;
  const int port = free_port();
  const auto host = launcher_args("2:2", port, "spares", 1, true),
             common = launcher_args("2:2", port, "spares", 1, false);
  // rank.restart files say who ran what; a worker lasts 3 s (the next round's too).
  const std::vector<std::string> worker = {
      "sh", "-c", "echo $$ > " + dir.path() + "/ran.$RANK.$TORCHELASTIC_RESTART_COUNT; sleep 3"};
  Background a(with(host, worker));
  Background b(with(common, worker));
  REQUIRE(wait_until([&] { return file_exists(dir.path() + "/ran.1.0"); }, 60s));
  Background c(with(common, worker));
  REQUIRE(wait_until([&] { return c.err_so_far().find("waits as a hot spare") != std::string::npos; }, 30s));
  Background d(with(common, worker));
  REQUIRE(wait_until([&] { return d.err_so_far().find("waits as a hot spare") != std::string::npos; }, 30s));
  Background e(with(common, worker));
  REQUIRE(wait_until([&] { return e.err_so_far().find("waits as a hot spare") != std::string::npos; }, 30s));
  CHECK_FALSE(file_exists(dir.path() + "/ran.0.1"));  // the spares asked for no restart
  e.signal(SIGKILL);
  e.wait(10s);
  b.signal(SIGKILL);
  const RunResult ra = a.wait(90s), rc = c.wait(90s), rd = d.wait(90s);
  b.wait(10s);
  INFO(ra.err << "\n---\n" << rc.err << "\n---\n" << rd.err);
  CHECK(ra.exit_code == 0);
  CHECK(rc.exit_code == 0);
  CHECK(rd.exit_code == 0);
  CHECK_THAT(ra.err, Catch::Contains("node 1 (") && Catch::Contains("was lost"));
  // Round 1: node 0 and one spare in node 1's seat; the other spare never ran a worker.
  CHECK(file_exists(dir.path() + "/ran.0.1"));
  CHECK(file_exists(dir.path() + "/ran.1.1"));
  const bool c_took = rc.err.find("round 1: node 1 of 2") != std::string::npos;
  const bool d_took = rd.err.find("round 1: node 1 of 2") != std::string::npos;
  CHECK(c_took != d_took);
  CHECK_THAT(c_took ? rd.err : rc.err,
             Catch::Contains("the job ended (exit 0) while this node waited as a hot spare; no worker of it ran here"));
}
