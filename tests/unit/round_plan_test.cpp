// Rank assignment for a rendezvous round, and the records' JSON round trips.
#include <catch2/catch.hpp>

#include <algorithm>
#include <csignal>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/rendezvous/abort_record.hpp"
#include "launcher/rendezvous/round_plan.hpp"

using namespace ddp::launch;
using namespace ddp::launch::os;
using namespace ddp::launch::rendezvous;
using namespace ddp::launch::report;

namespace {

NodeInfo node(const std::string& name, int nproc, int requested = -1, int previous = -1) {
  NodeInfo n;
  n.name = name;
  n.host = name + ".host";
  n.addr = name + ".addr";
  n.worker_port = 1000 + static_cast<int>(name.size());
  n.nproc = nproc;
  n.requested_rank = requested;
  n.previous_rank = previous;
  n.nnodes_min = 1;
  n.nnodes_max = 4;
  return n;
}

}  // namespace

TEST_CASE("ranks follow join order, RANK bases are prefix sums of nproc") {
  auto plan = make_plan({node("a", 2), node("b", 4), node("c", 1)}, 3, 1);
  REQUIRE(plan.error.empty());
  REQUIRE(plan.nodes.size() == 3);
  CHECK(plan.nodes[0].info.name == "a");
  CHECK(plan.nodes[1].base_rank == 2);
  CHECK(plan.nodes[2].base_rank == 6);
  CHECK(plan.world_size == 7);
  CHECK(plan.master_addr == "a.addr");
  CHECK(plan.round == 3);
  CHECK(plan.restart_count == 1);
}

TEST_CASE("an explicit --node-rank is honoured, previous ranks are kept when free") {
  auto plan = make_plan({node("a", 1), node("b", 1, 0), node("c", 1, -1, 2), node("d", 1)}, 0, 0);
  REQUIRE(plan.error.empty());
  CHECK(plan.nodes[0].info.name == "b");  // asked for 0
  CHECK(plan.nodes[2].info.name == "c");  // had 2 before
  CHECK(plan.nodes[1].info.name == "a");  // first free, join order
  CHECK(plan.nodes[3].info.name == "d");
  CHECK(plan.master_addr == "b.addr");  // the workers' store lives on rank 0's node
  CHECK(plan.master_port == plan.nodes[0].info.worker_port);
}

TEST_CASE("disagreements become a plan error, not a hang") {
  CHECK_THAT(make_plan({node("a", 1, 1), node("b", 1, 1)}, 0, 0).error,
             Catch::Contains("node rank 1 is claimed twice") && Catch::Contains("a.host") && Catch::Contains("b.host"));
  CHECK_THAT(make_plan({node("a", 1, 5), node("b", 1)}, 0, 0).error, Catch::Contains("--node-rank 5"));
  auto other = node("b", 1);
  other.nnodes_max = 3;
  CHECK_THAT(make_plan({node("a", 1), other}, 0, 0).error, Catch::Contains("disagree on --nnodes"));
  auto restarts = node("b", 1);
  restarts.max_restarts = 2;
  CHECK_THAT(make_plan({node("a", 1), restarts}, 0, 0).error, Catch::Contains("--max-restarts"));
}

TEST_CASE("records survive JSON round trips, garbage is rejected") {
  auto plan = make_plan({node("a", 2), node("b", 3)}, 1, 2);
  auto back = plan_from_json(summary_to_json(plan));
  CHECK(back.world_size == 5);
  CHECK(back.nnodes == 2);
  CHECK(back.tickets == 2);
  CHECK(back.restart_count == 2);
  CHECK(back.nodes.empty());  // the summary carries no node
  auto nodes = nodes_from_json(nodes_to_json(plan));
  REQUIRE(nodes.size() == 2);
  CHECK(nodes[1].info.name == "b");
  CHECK(nodes[1].base_rank == 2);
  CHECK(nodes[1].ticket == 2);
  auto seat = seat_from_json(seat_to_json(plan.nodes[1]), node("b", 3));
  CHECK(seat.group_rank == 1);
  CHECK(seat.base_rank == 2);
  CHECK(seat.info.nproc == 3);
  CHECK_THROWS(seat_from_json("{}", node("b", 3)));
  CHECK_THROWS(nodes_from_json("{}"));
  CHECK(node_info_from_json(to_json(node("x", 7, 1))).nproc == 7);
  AbortRecord a;
  a.failure = FailureKind::kNodeLost;
  a.reason = "node 1 lost";
  a.exit_code = 124;
  a.final = true;
  auto ab = abort_from_json(to_json(a));
  CHECK(ab.failure == FailureKind::kNodeLost);
  CHECK(ab.reason == "node 1 lost");
  CHECK(ab.final);
  CHECK_THROWS(plan_from_json("{}"));
  CHECK_THROWS(abort_from_json("not json"));
  CHECK_THROWS(node_info_from_json(R"({"name": 1})"));
}

namespace {

// The exit code and message of what `parse` throws ("" if it does not throw).
template <typename Parse>
std::pair<int, std::string> failure_of(Parse parse) {
  try {
    parse();
  } catch (const LaunchError& e) {
    return {e.exit_code(), e.what()};
  }
  return {0, ""};
}

}  // namespace

TEST_CASE("a malformed record from another node is a rendezvous error with the version hint") {
  const std::vector<std::pair<int, std::string>> failures = {
      failure_of([] { plan_from_json("{}"); }),
      failure_of([] { plan_from_json("[1, 2]"); }),
      failure_of([] { abort_from_json("not json"); }),
      failure_of([] { node_info_from_json(R"({"name": 1})"); }),
  };
  for (const auto& [code, message] : failures) {
    CHECK(code == exit_code::kRendezvousFailed);
    CHECK_THAT(message,
               Catch::Contains("malformed") && Catch::Contains("do all nodes run the same ddp-launch version?"));
  }
  AbortRecord a;
  std::string text = to_json(a);
  text.replace(text.find("\"kind\":0"), 8, "\"kind\":7");  // a kind this version does not know
  auto [code, message] = failure_of([&] { abort_from_json(text); });
  CHECK(code == exit_code::kRendezvousFailed);
  CHECK_THAT(message, Catch::Contains("unknown kind 7"));
}

TEST_CASE("abort records come from named factories") {
  WorkerOutcome root;
  root.rank = 5;
  root.local_rank = 1;
  root.pid = 99;
  root.status = ExitStatus{false, 3, 0};
  root.error = ErrorRecord{"E: boom", "tb", std::nullopt};
  auto failure = AbortRecord::worker_failure(root, 2, "h2", true);
  CHECK(failure.failure == FailureKind::kCrash);
  CHECK(failure.reason == "rank 5 on node 2 (h2) failed with exit code 3");
  CHECK(failure.exit_code == 3);
  CHECK(failure.error == "E: boom");
  CHECK(failure.final);
  auto remote = failure.remote_failure();
  CHECK(remote.exit == "exit code 3");
  CHECK(remote.rank == 5);
  CHECK(remote.pid == 99);

  auto lost = AbortRecord::lost_node(1, "h1", "connection lost", false);
  CHECK(lost.failure == FailureKind::kNodeLost);
  CHECK(lost.reason == "node 1 (h1) was lost: connection lost");
  CHECK(lost.exit_code == exit_code::kRendezvousFailed);
  CHECK(lost.remote_failure().exit == lost.reason);
  CHECK(lost.remote_failure().rank == -1);

  auto grow = AbortRecord::membership_change(0, "h0");
  CHECK(grow.failure == FailureKind::kMembership);
  CHECK_FALSE(grow.final);

  auto stop = AbortRecord::stopped_by_signal(3, "h3", SIGTERM);
  CHECK(stop.reason == "node 3 (h3) was stopped by SIGTERM");
  CHECK(stop.exit_code == 128 + SIGTERM);
  CHECK(stop.final);
  CHECK(abort_from_json(to_json(stop)).status == stop.reason);
  CHECK(abort_from_json(to_json(stop)).failure == FailureKind::kStopped);
  // A many-host agent's launching machine said why: told instead of the signal.
  auto told = AbortRecord::stopped_by_signal(0, "h0", SIGTERM, std::string("host h2 (node rank 1) was lost"));
  CHECK(told.reason == "node 0 (h0) was stopped: host h2 (node rank 1) was lost");
  CHECK(told.exit_code == 128 + SIGTERM);
}

TEST_CASE("every failure kind survives the abort record; older records without it get theirs from the rest") {
  for (FailureKind kind : kAllFailureKinds) {
    AbortRecord a;
    a.failure = kind;
    CHECK(abort_from_json(to_json(a)).failure == kind);
  }
  // As launchers before the "failure" field wrote them.
  auto legacy = [](int kind, const std::string& hang, int rank, int exit_code) {
    const std::string text = "{\"kind\":" + std::to_string(kind) + R"(,"reason":"r","node_rank":1,"host":"h",)" +
                             "\"rank\":" + std::to_string(rank) + R"(,"local_rank":0,"pid":7,"exit_code":)" +
                             std::to_string(exit_code) + R"(,"status":"s","error":"","traceback":"","hang":")" + hang +
                             R"(","stacks_file":"","final":true})";
    return abort_from_json(text).failure;
  };
  CHECK(legacy(1, "", -1, 124) == FailureKind::kNodeLost);
  CHECK(legacy(2, "", -1, 1) == FailureKind::kMembership);
  CHECK(legacy(0, "hang: no progress", 3, 119) == FailureKind::kHang);
  CHECK(legacy(0, "", -1, 130) == FailureKind::kStopped);
  CHECK(legacy(0, "", 3, 137) == FailureKind::kSignal);
  CHECK(legacy(0, "", 3, 3) == FailureKind::kCrash);
  AbortRecord unknown;
  std::string text = to_json(unknown);
  text.replace(text.find("\"crash\""), 7, "\"later\"");  // a kind a newer version added
  auto [code, message] = failure_of([&] { abort_from_json(text); });
  CHECK(code == exit_code::kRendezvousFailed);
  CHECK_THAT(message, Catch::Contains("unknown failure 'later'"));
}

TEST_CASE("a hang's abort record carries the verdict and 119; a record without it reads as before") {
  WorkerOutcome root;
  root.rank = 1;
  root.pid = 4711;
  root.status = ExitStatus{true, 0, SIGTERM};  // stopped by us after the capture
  root.failure = FailureKind::kHang;
  root.verdict = "hang: no progress for 3 s; rank 1 (pid 4711) at step 3";
  root.stacks_file = "/logs/run/attempt_0/1/stacks.txt";
  auto hung = AbortRecord::worker_failure(root, 1, "h1", false);
  CHECK(hung.exit_code == exit_code::kHang);
  CHECK(hung.reason == "node 1 (h1) detected a " + root.verdict);
  CHECK(hung.status == "stopped by ddp-launch: a hang (exit code 119)");
  auto back = abort_from_json(to_json(hung));
  CHECK(back.verdict == root.verdict);
  CHECK(back.failure == FailureKind::kHang);
  CHECK(back.exit_code == exit_code::kHang);
  CHECK(back.remote_failure().verdict == root.verdict);
  CHECK(back.stacks_file == root.stacks_file);
  const std::string report = format_remote_failure_report("train.py", back.remote_failure(), 0, "h0");
  CHECK_THAT(report, Catch::Contains("FAILED on node 1 (h1)") && Catch::Contains("hang      : " + root.verdict) &&
                         Catch::Contains("stacks    : " + root.stacks_file + " on node 1 (h1)") &&
                         Catch::Contains("a hang (exit code 119)"));

  root.failure = FailureKind::kSignal;
  root.verdict.clear();  // an ordinary failure, as an older launcher writes it: no "hang" field
  std::string old = to_json(AbortRecord::worker_failure(root, 1, "h1", true));
  for (const std::string field : {",\"hang\":\"\"", ",\"stacks_file\":\"\"", "\"failure\":\"signal\","}) {
    REQUIRE(old.find(field) != std::string::npos);
    old.erase(old.find(field), field.size());
  }
  auto plain = abort_from_json(old);
  CHECK(plain.verdict.empty());
  CHECK(plain.failure == FailureKind::kSignal);
  CHECK(plain.exit_code == 128 + SIGTERM);
  CHECK_THAT(format_remote_failure_report("train.py", plain.remote_failure(), 0, "h0"), !Catch::Contains("hang"));
}

TEST_CASE("ROLE_RANK and ROLE_WORLD_SIZE count within each role, as torchrun does") {
  auto a = node("a", 2), b = node("b", 3), c = node("c", 4);
  b.role = "evaluator";
  auto plan = make_plan({a, b, c}, 0, 0);
  REQUIRE(plan.error.empty());
  auto role_ranks = [](const PlannedNode& n) { return std::pair<int, int>{n.role_base_rank, n.role_world_size}; };
  CHECK(role_ranks(plan.nodes[0]) == std::pair<int, int>{0, 6});  // trainers: a (2) + c (4)
  CHECK(role_ranks(plan.nodes[1]) == std::pair<int, int>{0, 3});  // the evaluator alone
  CHECK(role_ranks(plan.nodes[2]) == std::pair<int, int>{2, 6});  // after a's two
  auto back = nodes_from_json(nodes_to_json(plan));
  CHECK(back[1].info.role == "evaluator");
  CHECK(role_ranks(back[2]) == std::pair<int, int>{2, 6});
  CHECK(role_ranks(seat_from_json(seat_to_json(plan.nodes[2]), c)) == std::pair<int, int>{2, 6});
}

TEST_CASE("a plan of 20000 nodes: previous ranks kept, the others fill the free ranks in join order") {
  std::vector<NodeInfo> joined;
  for (int i = 0; i < 20000; ++i) {
    // Every third node had a rank before (its index reversed), the rest are new.
    joined.push_back(node("n" + std::to_string(i), 8, -1, i % 3 == 0 ? 19999 - i : -1));
    joined.back().nnodes_max = 20000;
  }
  auto plan = make_plan(joined, 0, 0);
  REQUIRE(plan.error.empty());
  REQUIRE(plan.nnodes == 20000);
  CHECK(plan.world_size == 160000);
  std::vector<bool> seen(20000, false);
  int previous_new_rank = -1;
  for (const auto& n : plan.nodes) {
    const int i = n.ticket - 1;
    CHECK(n.info.name == "n" + std::to_string(i));
    CHECK(n.base_rank == 8 * n.group_rank);
    CHECK(n.role_base_rank == n.base_rank);
    seen[static_cast<size_t>(i)] = true;
    if (i % 3 == 0) {
      CHECK(n.group_rank == 19999 - i);
    }
  }
  for (const auto& n : plan.nodes)  // by group rank: the new nodes appear in join order
    if ((n.ticket - 1) % 3 != 0) {
      CHECK(n.ticket > previous_new_rank);
      previous_new_rank = n.ticket;
    }
  CHECK(std::count(seen.begin(), seen.end(), true) == 20000);
}
