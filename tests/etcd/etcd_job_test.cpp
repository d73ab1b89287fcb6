// Real ddp-launch jobs rendezvousing through a real etcd (--rdzv-backend=etcd): two nodes
// end to end, the first node's launcher SIGKILLed (the other re-forms and finishes), an
// etcd member killed mid-job (no restart), its connections to etcd cut again and again
// (`ss -K`; skipped, 77, where that cannot work), and the errors: etcd unreachable, a job
// lease key not written by ddp-launch, wrong credentials, TLS that does not check out.
#include <catch2/catch.hpp>

#include <csignal>
#include <map>
#include <string>
#include <thread>

#include "tests/etcd/etcd_cluster.hpp"
#include "tests/support/connections.hpp"

using namespace ddp::test;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> etcd_node(const std::string& endpoints, const std::string& nnodes, const std::string& id,
                                   const std::string& conf = "") {
  return {
      launcher_path(),          "--nnodes=" + nnodes,
      "--rdzv-backend=etcd",    "--rdzv-endpoint=" + endpoints,
      "--rdzv-id=" + id,        "--nproc-per-node=1",
      "--monitor-interval=0.1", "--rdzv-conf=join_timeout=60,last_call_timeout=1" + (conf.empty() ? "" : "," + conf)};
}

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& more) {
  base.insert(base.end(), more.begin(), more.end());
  return base;
}

// A worker that records each start (rank, world size, restart count) in DIR/starts.<pid
// of its launcher's node>, then waits for DIR/go (or finishes at once after a restart).
std::vector<std::string> worker(const TempDir& dir) {
  return {"sh", "-c",
          "echo \"$RANK $WORLD_SIZE $TORCHELASTIC_RESTART_COUNT\" >> " + dir.path() + "/starts.$GROUP_RANK.$$; " +
              "[ \"$TORCHELASTIC_RESTART_COUNT\" -ge 1 ] && exit 0; " + "while [ ! -e " + dir.path() +
              "/go ]; do sleep 0.1; done"};
}

int count_files(const TempDir& dir, const std::string& prefix) {
  RunResult r = run({"sh", "-c", "ls " + dir.path() + " | grep -c '^" + prefix + "'"}, {}, 10s);
  return std::atoi(r.out.c_str());
}

}  // namespace

TEST_CASE("etcd rendezvous: two nodes agree on ranks, run, and leave no keys behind") {
  require_etcd();
  EtcdCluster cluster(1);
  TempDir dir;
  const std::string dump = "env > " + dir.path() + "/env.$RANK";
  Background a(with(etcd_node(cluster.endpoint(0), "2", "two"), {"sh", "-c", dump}));
  RunResult b =
      run(with(etcd_node(cluster.endpoint(0), "2", "two", "heartbeat_timeout=3"), {"sh", "-c", dump}), {}, 120s);
  RunResult ra = a.wait(60s);
  INFO(ra.err << b.err);
  REQUIRE(ra.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  CHECK_THAT(ra.err, Catch::Contains("joined etcd at " + cluster.endpoint(0)));
  for (int r = 0; r < 2; ++r) {
    const std::string env = read_file(dir / ("env." + std::to_string(r)));
    CHECK_THAT(env, Catch::Contains("WORLD_SIZE=2\n") && Catch::Contains("TORCHELASTIC_RUN_ID=two\n") &&
                        Catch::Contains("GROUP_RANK=" + std::to_string(r) + "\n"));
  }
  CHECK(cluster.count_keys("/ddp-launch/two/") == 0);
}

TEST_CASE("etcd rendezvous: the first node's launcher SIGKILLed, the other re-forms alone and finishes") {
  require_etcd();
  EtcdCluster cluster(1);
  TempDir dir;
  auto node = etcd_node(cluster.endpoint(0), "1:2", "kill-first", "last_call_timeout=30,heartbeat_timeout=3");
  node.insert(node.begin() + 1, "--max-restarts=1");
  Background first(with(node, worker(dir)));
  REQUIRE(wait_until([&] { return first.err_so_far().find("joined etcd") != std::string::npos; }, 60s));
  Background second(with(node, worker(dir)));
  REQUIRE(wait_until([&] { return count_files(dir, "starts.") == 2; }, 60s));
  first.signal(SIGKILL);  // the round's leader, and the first to join
  RunResult r = second.wait(90s);
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, Catch::Contains("was lost: its etcd lease expired") && Catch::Contains("(restart 1)"));
  CHECK(count_files(dir, "starts.0.") == 2);  // the survivor is node 0 of 1 after the restart
}

TEST_CASE("etcd rendezvous: one of three etcd members killed mid-job, the job runs on without a restart") {
  require_etcd();
  EtcdCluster cluster(3);
  TempDir dir;
  // Member 0 first in every launcher's list: their connections are to the member that dies.
  auto node = etcd_node(cluster.endpoints(), "2", "member-dies", "heartbeat_timeout=5");
  node.insert(node.begin() + 1, "--max-restarts=3");
  Background a(with(node, worker(dir)));
  Background b(with(node, worker(dir)));
  REQUIRE(wait_until([&] { return count_files(dir, "starts.") == 2; }, 60s));
  cluster.kill(0);
  std::this_thread::sleep_for(7s);  // past the lease TTL: nobody may count as lost
  write_file(dir / "go", "");
  RunResult ra = a.wait(60s), rb = b.wait(60s);
  INFO(ra.err << rb.err);
  CHECK(ra.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(count_files(dir, "starts.") == 2);  // each worker started once
  CHECK_THAT(ra.err + rb.err, !Catch::Contains("restarting") && !Catch::Contains("lost"));
}

TEST_CASE("etcd rendezvous: etcd unreachable at start, a clear error naming the endpoint, exit 124") {
  require_etcd();
  const std::string nowhere = "127.0.0.1:" + std::to_string(free_port());
  RunResult r = run(with(etcd_node(nowhere, "2", "nowhere", "join_timeout=3"), {"true"}), {}, 60s);
  CHECK(r.exit_code == 124);
  CHECK_THAT(r.err, Catch::Contains("cannot reach etcd at " + nowhere + " within the join timeout") &&
                        Catch::Contains("refused"));
  CHECK(r.seconds < 30);  // gave up at the join timeout (3 s), not later; generous for a loaded machine
}

TEST_CASE("etcd rendezvous: a job lease key ddp-launch did not write ends the launch at once, exit 124") {
  require_etcd();
  EtcdCluster cluster(1);
  REQUIRE(cluster.etcdctl({"put", "/ddp-launch/stale/job_lease", "12345"}) == 0);    // no lease: never expires
  const auto node = with(etcd_node(cluster.endpoint(0), "1:2", "stale"), {"true"});  // join_timeout=60
  RunResult r = run(node, {}, 120s);
  INFO(r.err);
  CHECK(r.exit_code == 124);
  CHECK_THAT(r.err, Catch::Contains("the job's key /ddp-launch/stale/job_lease names lease 12345") &&
                        Catch::Contains("etcdctl del --prefix /ddp-launch/stale/") &&
                        !Catch::Contains("is etcd running"));
  CHECK(r.seconds < 20);  // at once, not after the 60 s join timeout; generous for a loaded machine
  // The advice works: with the job's keys deleted, the same command runs.
  REQUIRE(cluster.etcdctl({"del", "--prefix", "/ddp-launch/stale/"}) == 0);
  RunResult again = run(node, {}, 120s);
  INFO(again.err);
  CHECK(again.exit_code == 0);
}

TEST_CASE("etcd rendezvous: user/password authentication, wrong credentials named") {
  require_etcd();
  require_binary("etcdctl", "etcd-client");
  EtcdCluster cluster(1);
  REQUIRE(cluster.etcdctl({"user", "add", "root", "--new-user-password=s3cret"}) == 0);
  REQUIRE(cluster.etcdctl({"auth", "enable"}) == 0);
  TempDir dir;
  write_file(dir / "pw", "s3cret\n");
  RunResult ok =
      run(with(etcd_node(cluster.endpoint(0), "1:2", "auth", "username=root,password_file=" + (dir / "pw")), {"true"}),
          {}, 60s);
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  RunResult wrong = run(with(etcd_node(cluster.endpoint(0), "1:2", "auth", "username=root"), {"true"}),
                        {{"DDP_LAUNCH_ETCD_PASSWORD", "wrong"}}, 60s);
  CHECK(wrong.exit_code == 124);
  CHECK_THAT(wrong.err, Catch::Contains("rejected user 'root'") && Catch::Contains("DDP_LAUNCH_ETCD_PASSWORD"));
  RunResult anonymous = run(with(etcd_node(cluster.endpoint(0), "1:2", "auth"), {"true"}), {}, 60s);
  CHECK(anonymous.exit_code == 124);
  CHECK_THAT(anonymous.err, Catch::Contains("requires authentication") && Catch::Contains("username="));
  RunResult on_command_line =
      run(with(etcd_node(cluster.endpoint(0), "1:2", "auth", "password=s3cret"), {"true"}), {}, 60s);
  CHECK(on_command_line.exit_code == 121);
  CHECK_THAT(on_command_line.err, Catch::Contains("ps"));
}

TEST_CASE("etcd rendezvous: TLS with the right CA works, an untrusted certificate or plain HTTP is a clear error") {
  require_etcd();
  TempDir certs_dir;
  TestCerts certs(certs_dir);
  EtcdCluster cluster(1, &certs);
  RunResult ok =
      run(with(etcd_node(cluster.endpoint(0), "1:2", "tls", "protocol=https,cacert=" + certs.ca), {"true"}), {}, 60s);
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK_THAT(ok.err, Catch::Contains("over TLS"));
  RunResult untrusted = run(with(etcd_node(cluster.endpoint(0), "1:2", "tls", "protocol=https"), {"true"}), {}, 60s);
  CHECK(untrusted.exit_code == 124);
  CHECK_THAT(untrusted.err, Catch::Contains("TLS handshake with " + cluster.endpoint(0) + " failed") &&
                                Catch::Contains("certificate verify failed") && Catch::Contains("cacert="));
  RunResult plain = run(with(etcd_node(cluster.endpoint(0), "1:2", "tls", "join_timeout=4"), {"true"}), {}, 60s);
  CHECK(plain.exit_code == 124);
  CHECK_THAT(plain.err, Catch::Contains("protocol=https"));
  RunResult missing_ca = run(
      with(etcd_node(cluster.endpoint(0), "1:2", "tls", "protocol=https,cacert=/nonexistent.pem"), {"true"}), {}, 60s);
  CHECK(missing_ca.exit_code == 124);
  CHECK_THAT(missing_ca.err, Catch::Contains("/nonexistent.pem"));
}

// With a 30 s heartbeat interval the tick alone would find the abort record up to 30 s
// late; the etcd watch on the round's abort key delivers it at once. The bound (20 s) is
// far above the expected tens of milliseconds (scripts/bench-reform.sh measures it).
TEST_CASE("etcd rendezvous: a worker failure restarts the other node through its abort watch, not at a heartbeat") {
  require_etcd();
  EtcdCluster cluster(1);
  TempDir dir;
  const std::string script = "echo $TORCHELASTIC_RESTART_COUNT >> " + dir.path() +
                             "/count.$RANK; "
                             "if [ $RANK = 1 ] && [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then "
                             "while [ ! -s " +
                             dir.path() +
                             "/count.0 ]; do sleep 0.05; done; sleep 0.5; exit 4; fi; "
                             "if [ $TORCHELASTIC_RESTART_COUNT = 0 ]; then sleep 100; fi";
  auto node = etcd_node(cluster.endpoint(0), "2", "abort-watch", "heartbeat_interval=30,heartbeat_timeout=90");
  node.insert(node.begin() + 1, "--max-restarts=1");
  Background b(with(node, {"--node-rank=1", "sh", "-c", script}));
  const auto started = std::chrono::steady_clock::now();
  RunResult a = run(with(node, {"--node-rank=0", "sh", "-c", script}), {}, 120s);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  RunResult rb = b.wait(120s);
  INFO("node 0:\n" << a.err << "\nnode 1:\n" << rb.err);
  CHECK(a.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(read_file(dir / "count.0") == "0\n1\n");
  CHECK(read_file(dir / "count.1") == "0\n1\n");
  CHECK_THAT(a.err, Catch::Contains("restarting on every node in round 1"));
  CHECK(wall < 20.0);
}

TEST_CASE("etcd rendezvous: connections to etcd cut again and again (ss -K), the job carries on without a restart") {
  require_etcd();
  require_cut_connections();
  EtcdCluster cluster(1);
  TempDir dir;
  const int port = std::stoi(cluster.endpoint(0).substr(cluster.endpoint(0).rfind(':') + 1));
  const std::string script = "echo $TORCHELASTIC_RESTART_COUNT >> " + dir.path() + "/count.$RANK; sleep 8";
  auto node = etcd_node(cluster.endpoint(0), "2", "cut", "heartbeat_interval=0.5,heartbeat_timeout=5");
  node.insert(node.begin() + 1, "--max-restarts=1");
  Background a(with(node, {"sh", "-c", script}));
  Background b(with(node, {"sh", "-c", script}));
  REQUIRE(wait_until([&] { return !read_file(dir / "count.0").empty() && !read_file(dir / "count.1").empty(); }, 60s));
  int cuts = 0;
  for (int i = 0; i < 8; ++i) {
    cuts += cut_connections(port) ? 1 : 0;
    std::this_thread::sleep_for(400ms);
  }
  RunResult ra = a.wait(120s), rb = b.wait(120s);
  INFO("cuts: " << cuts << "\n" << ra.err << rb.err);
  CHECK(cuts > 0);
  CHECK(ra.exit_code == 0);
  CHECK(rb.exit_code == 0);
  CHECK(read_file(dir / "count.0") == "0\n");
  CHECK(read_file(dir / "count.1") == "0\n");
  CHECK_THAT(ra.err + rb.err, !Catch::Contains("restarting") && !Catch::Contains("lost"));
}
