// The join protocol on an in-process MemoryStore with one thread per launcher.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/rendezvous/round_check.hpp"
#include "launcher/rendezvous/rendezvous.hpp"
#include "tests/support/rendezvous_joins.hpp"
#include "launcher/store/memory_store.hpp"
#include "launcher/store/protocol.hpp"

using namespace ddp::launch;
using namespace ddp::launch::cli;
using namespace ddp::launch::rendezvous;
using namespace ddp::launch::report;
using ddp::launch::testing::policy;
using ddp::launch::testing::seated;

namespace {

RendezvousConf fast_conf() {
  RendezvousConf c;
  c.join_timeout_s = 5;
  c.last_call_timeout_s = 0.3;
  c.heartbeat_interval_s = 0.05;
  c.heartbeat_timeout_s = 1;
  return c;
}

RendezvousPolicy screened(const RendezvousConf& conf, int nmin, int nmax, const ScreenRules& rules) {
  RendezvousPolicy p = policy(conf, false, nmin, nmax);
  p.screen = rules;
  return p;
}

// Every round elects its leader; `lost(name)`: whether a launcher's liveness is gone.
RendezvousPolicy elected(const RendezvousConf& conf, const std::string& name, int nmin, int nmax,
                         std::function<bool(const std::string&)> lost) {
  RendezvousPolicy p = policy(conf, false, nmin, nmax);
  p.leader = {LeaderMode::Kind::kElected, name, std::move(lost)};
  return p;
}

NodeInfo node(const std::string& name, int nproc, int requested, int nmin, int nmax) {
  NodeInfo n;
  n.name = name;
  n.host = name;
  n.addr = name;
  n.worker_port = 4000;
  n.nproc = nproc;
  n.requested_rank = requested;
  n.nnodes_min = nmin;
  n.nnodes_max = nmax;
  return n;
}

}  // namespace

TEST_CASE("static rendezvous: the leader closes the round when every node joined") {
  store::MemoryStore store;
  auto conf = fast_conf();
  auto follower = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 3, 3), {});
    return seated(r.join(node("n2", 2, 2, 3, 3), -1, 0));
  });
  auto follower1 = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 3, 3), {});
    return seated(r.join(node("n1", 1, 1, 3, 3), -1, 0));
  });
  Rendezvous leader(store, policy(conf, true, 3, 3), {});
  RoundPlan plan = seated(leader.join(node("n0", 4, 0, 3, 3), 0, 0));
  RoundPlan p2 = follower.get();
  RoundPlan p1 = follower1.get();
  CHECK(plan.world_size == 7);
  CHECK(p2.find("n2")->group_rank == 2);
  CHECK(p2.find("n2")->base_rank == 5);
  CHECK(p1.find("n1")->base_rank == 4);
}

TEST_CASE("a follower reads its own seat, group rank 0 every node, nobody the whole plan otherwise") {
  store::MemoryStore store;
  auto conf = fast_conf();
  auto join = [&](NodeInfo n) {
    return std::async(std::launch::async, [&store, conf, n] {
      Rendezvous r(store, policy(conf, false, 3, 3), {});
      return seated(r.join(n, -1, 0));
    });
  };
  auto evaluator = node("e", 3, 2, 3, 3);
  evaluator.role = "evaluator";
  auto rank0 = join(node("z", 2, 0, 3, 3));
  auto rank2 = join(evaluator);
  Rendezvous leader(store, policy(conf, true, 3, 3), {});
  RoundPlan plan = seated(leader.join(node("l", 4, 1, 3, 3), 0, 0));
  REQUIRE(plan.whole());
  RoundPlan p0 = rank0.get();
  RoundPlan p2 = rank2.get();
  CHECK(p0.whole());  // it serves the workers' store and the status page of every node
  REQUIRE(p0.nodes.size() == 3);
  CHECK(p0.nodes[1].info.name == "l");
  REQUIRE(p2.nodes.size() == 1);  // its seat only
  CHECK(p2.nnodes == 3);
  CHECK(p2.world_size == 9);
  const PlannedNode& me = p2.nodes[0];
  CHECK(me.info.name == "e");
  CHECK(me.group_rank == 2);
  CHECK(me.base_rank == 6);
  CHECK(me.role_base_rank == 0);
  CHECK(me.role_world_size == 3);
  CHECK(p2.master_addr == "z");
  // The records it read: the summary (no nodes) and its seat.
  CHECK(plan_from_json(*store.try_get(JobKeys::plan(0))).nodes.empty());
  CHECK(store.check({JobKeys::seat(0, me.ticket)}));
}

TEST_CASE("elastic rendezvous closes at MIN after the last call") {
  store::MemoryStore store;
  auto conf = fast_conf();
  auto follower = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 2, 4), {});
    return seated(r.join(node("b", 1, -1, 2, 4), -1, 0));
  });
  Rendezvous leader(store, policy(conf, true, 2, 4), {});
  auto t0 = std::chrono::steady_clock::now();
  RoundPlan plan = seated(leader.join(node("a", 1, -1, 2, 4), 0, 0));
  CHECK(plan.nodes.size() == 2);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds(250));  // waited for more
  CHECK(follower.get().world_size == 2);
}

TEST_CASE("a node that comes too late waits for the next round") {
  store::MemoryStore store;
  auto conf = fast_conf();
  auto first = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 2, 3), {});
    return seated(r.join(node("b", 1, -1, 2, 3), -1, 0));
  });
  Rendezvous leader(store, policy(conf, true, 2, 3), {});
  RoundPlan round0 = seated(leader.join(node("a", 1, -1, 2, 3), 0, 0));
  CHECK(round0.nodes.size() == 2);
  CHECK(first.get().nnodes == 2);
  // A third node arrives after the plan: it asks to be let in and waits for round 1.
  auto late = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 2, 3), {});
    return seated(r.join(node("c", 1, -1, 2, 3), -1, 0));
  });
  REQUIRE(store.wait({JobKeys::waiting(0)}, std::chrono::milliseconds(5000)));
  auto b_again = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 2, 3), {});
    return seated(r.join(node("b", 1, -1, 2, 3), 1, 0));
  });
  RoundPlan round1 = seated(leader.join(node("a", 1, -1, 2, 3), 1, 0));
  CHECK(round1.nodes.size() == 3);
  CHECK(late.get().find("c") != nullptr);
  CHECK(b_again.get().round == 1);
}

TEST_CASE("a rendezvous that never completes times out naming who joined") {
  store::MemoryStore store;
  auto conf = fast_conf();
  conf.join_timeout_s = 0.5;
  Rendezvous leader(store, policy(conf, true, 2, 2), {});
  try {
    seated(leader.join(node("lonely", 1, 0, 2, 2), 0, 0));
    FAIL("expected a timeout");
  } catch (const LaunchError& e) {
    CHECK(e.exit_code() == exit_code::kRendezvousFailed);
    CHECK_THAT(e.what(), Catch::Contains("1 of 2 nodes joined: node 0 (lonely); missing: node 1"));
  }
  // The failed plan is published so that followers do not wait forever either.
  Rendezvous late(store, policy(conf, false, 2, 2), {});
  CHECK_THROWS_WITH(seated(late.join(node("x", 1, 1, 2, 2), -1, 0)), Catch::Contains("timed out"));
}

TEST_CASE("a follower whose round never gets a plan names the leader it waits for and the count") {
  store::MemoryStore store;
  auto conf = fast_conf();
  conf.join_timeout_s = 0.5;
  // The leader opened round 0 and joined it (ticket 1), then hung before its plan.
  NodeInfo stuck = node("lead", 1, 0, 3, 4);
  stuck.pid = 4242;
  store.add(JobKeys::ticket(0), 1);
  store.set(JobKeys::join(0, 1), to_json(stuck));
  store.set(JobKeys::open(0), "1");
  store.set(JobKeys::current_round(), "0");
  Rendezvous follower(store, policy(conf, false, 3, 4), {});
  CHECK_THROWS_WITH(seated(follower.join(node("f", 1, 1, 3, 4), -1, 0)),
                    Catch::Contains("timed out after 0.5 s waiting for the plan of round 0 (2 nodes joined, it "
                                    "waits for 3 to 4; its leader lead (pid 4242) has not published the plan)"));
}

TEST_CASE("duplicate node ranks fail the round on every node") {
  store::MemoryStore store;
  auto conf = fast_conf();
  auto dup = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 2, 2), {});
    try {
      seated(r.join(node("second", 1, 0, 2, 2), -1, 0));
    } catch (const LaunchError& e) {
      return std::string(e.what());
    }
    return std::string();
  });
  Rendezvous leader(store, policy(conf, true, 2, 2), {});
  CHECK_THROWS_WITH(seated(leader.join(node("first", 1, 0, 2, 2), 0, 0)), Catch::Contains("claimed twice"));
  CHECK_THAT(dup.get(), Catch::Contains("claimed twice"));
}

TEST_CASE("a signal interrupts a waiting rendezvous") {
  store::MemoryStore store;
  Rendezvous follower(store, policy(fast_conf(), false, 2, 2), [] { return 2; });
  const JoinOutcome outcome = follower.join(node("x", 1, 1, 2, 2), -1, 0);
  REQUIRE(std::holds_alternative<Interrupted>(outcome));
  CHECK(std::get<Interrupted>(outcome).signal == 2);
}

TEST_CASE("a struck-out node: left out with why read before the store may close; a latecomer turned away") {
  store::MemoryStore store;
  auto conf = fast_conf();
  conf.last_call_timeout_s = 30;  // round 0 closes when all three joined, however loaded the machine
  const ScreenRules rules{0, 0, parse_strike_policy("3/600")};
  auto struck = [](NodeInfo n) {
    n.strike_ages_s = {30, 20, 10};
    return n;
  };
  // c comes with three strikes: the leader leaves it out (MIN 2 allows), and counts it among the
  // nodes that must read why before the job's end closes the store.
  auto c = std::async(std::launch::async, [&] {
    Rendezvous r(store, screened(conf, 2, 3, rules), {});
    return seated(r.join(struck(node("c", 1, -1, 2, 3)), -1, 0));
  });
  auto b = std::async(std::launch::async, [&] {
    Rendezvous r(store, screened(conf, 2, 3, rules), {});
    return seated(r.join(node("b", 1, -1, 2, 3), -1, 0));
  });
  RendezvousPolicy leads = screened(conf, 2, 3, rules);
  leads.leader.kind = LeaderMode::Kind::kStoreHost;
  Rendezvous leader(store, leads, {});
  const RoundPlan plan = seated(leader.join(node("a", 1, -1, 2, 3), 0, 0));
  CHECK(plan.nodes.size() == 2);
  try {
    c.get();
    FAIL("c was not left out");
  } catch (const LaunchError& e) {
    CHECK(e.exit_code() == exit_code::kStruckOut);
  }
  CHECK(b.get().nodes.size() == 1);  // its own seat
  CHECK(store.add(JobKeys::left_out_read(0), 0) == 1);
  CHECK(leader.left_out_have_read());
  // A node left out that has not read why yet holds the leader's end (here: its read undone).
  store.add(JobKeys::left_out_read(0), -1);
  CHECK_FALSE(leader.left_out_have_read());
  store.add(JobKeys::left_out_read(0), 1);
  // A latecomer with three strikes is turned away at once: no restart asked (rN/waiting), no
  // spare seat taken.
  Rendezvous late(store, screened(conf, 2, 3, rules), {});
  try {
    seated(late.join(struck(node("d", 1, -1, 2, 3)), -1, 0));
    FAIL("the struck-out latecomer was let in");
  } catch (const LaunchError& e) {
    CHECK(e.exit_code() == exit_code::kStruckOut);
    CHECK_THAT(e.what(), Catch::Contains("struck out: its workers were the root cause 3 times within 600 s") &&
                             Catch::Contains("the running job is not restarted for it"));
  }
  CHECK(store.add(JobKeys::waiting(0), 0) == 0);
}

TEST_CASE("after a restart the leader closes the round once the expected nodes are back") {
  store::MemoryStore store;
  auto conf = fast_conf();
  conf.last_call_timeout_s = 30;  // a first round would wait this long for a third node
  auto follower = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 1, 3), {});
    return seated(r.join(node("b", 1, -1, 1, 3), 4, 0));
  });
  Rendezvous leader(store, policy(conf, true, 1, 3), {});
  auto t0 = std::chrono::steady_clock::now();
  RoundPlan plan = seated(leader.join(node("a", 1, -1, 1, 3), 4, 1, Regroup{2, 30}));
  CHECK(plan.nodes.size() == 2);
  CHECK(plan.restart_count == 1);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
  CHECK(follower.get().round == 4);
}

TEST_CASE("a node that comes when the job has its MAX nodes waits as a spare, takes a free seat, or is released") {
  store::MemoryStore store;
  auto conf = fast_conf();
  auto b0 = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 1, 2), {});
    return seated(r.join(node("b", 1, -1, 1, 2), -1, 0));
  });
  Rendezvous leader(store, policy(conf, true, 1, 2), {});
  RoundPlan round0 = seated(leader.join(node("a", 1, -1, 1, 2), 0, 0));
  REQUIRE(round0.nnodes == 2);
  REQUIRE(b0.get().nnodes == 2);
  // c comes after the plan of a full round: a spare (no restart asked for), waiting for round 1
  // past its join timeout.
  std::promise<int> spare_at;
  auto c = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 1, 2), {});
    const BecameSpare spare = std::get<BecameSpare>(r.join(node("c", 1, -1, 1, 2), -1, 0));
    spare_at.set_value(spare.round);
    return seated(r.join(node("c", 1, -1, 1, 2), spare.round + 1, spare.restart_count));
  });
  CHECK(spare_at.get_future().get() == 0);
  CHECK(store.add(JobKeys::spares(0), 0) == 1);
  CHECK_FALSE(store.check({JobKeys::waiting(0)}));
  std::this_thread::sleep_for(std::chrono::duration<double>(conf.join_timeout_s + 0.5));
  // b was lost: round 1 expects a and the spare, which takes b's seat (group rank 1).
  NodeInfo a1 = node("a", 1, -1, 1, 2);
  a1.previous_rank = 0;
  RoundPlan round1 = seated(leader.join(a1, 1, 1, Regroup{2 - 1, 30, 1}));
  CHECK(round1.nnodes == 2);
  const RoundPlan c_seated = c.get();
  REQUIRE(c_seated.find("c") != nullptr);
  CHECK(c_seated.find("c")->group_rank == 1);
  // d comes now: a spare, while b (back, its previous rank 1) and a restart with d expected
  // too: the previous round's nodes keep the seats, d stays a spare.
  auto d = std::async(std::launch::async, [&] {
    Rendezvous r(store, policy(conf, false, 1, 2), {});
    const BecameSpare spare = std::get<BecameSpare>(r.join(node("d", 1, -1, 1, 2), -1, 0));
    return r.join(node("d", 1, -1, 1, 2), spare.round + 1, spare.restart_count);
  });
  REQUIRE(store.wait({JobKeys::spares(1)}, std::chrono::milliseconds(5000)));
  auto c2 = std::async(std::launch::async, [&] {
    NodeInfo c_again = node("c", 1, -1, 1, 2);
    c_again.previous_rank = 1;
    Rendezvous r(store, policy(conf, false, 1, 2), {});
    return seated(r.join(c_again, 2, 1));
  });
  a1.previous_rank = 0;
  RoundPlan round2 = seated(leader.join(a1, 2, 2, Regroup{2, 30, 1}));
  CHECK(round2.nnodes == 2);
  CHECK(round2.find("d") == nullptr);
  CHECK(c2.get().find("c") != nullptr);
  CHECK(store.wait({JobKeys::spares(2)}, std::chrono::milliseconds(5000)));
  // The job ends (exit 3): the spare is released with the job's code.
  store.set(JobKeys::ended(), "3");
  const JoinOutcome released = d.get();
  REQUIRE(std::holds_alternative<SpareReleased>(released));
  CHECK(std::get<SpareReleased>(released).exit_code == 3);
  CHECK(store.add(JobKeys::ended_seen(), 0) == 1);
  // A spare counted but gone: the round closes without it (its grace, not the 30 s wait or a
  // failed round).
  RoundPlan round3 = seated(leader.join(a1, 3, 3, Regroup{1, 30, 1}));
  CHECK(round3.nnodes == 1);
}

namespace {

constexpr const char* kVersionHint = "do all nodes run the same ddp-launch version?";

// The exit code and message of the LaunchError a follower's join throws.
std::pair<int, std::string> join_failure(store::Store& store) {
  Rendezvous follower(store, policy(fast_conf(), false, 2, 2), {});
  try {
    seated(follower.join(node("x", 1, 1, 2, 2), -1, 0));
  } catch (const LaunchError& e) {
    return {e.exit_code(), e.what()};
  }
  return {0, ""};
}

// A two-node round as node 0 sees it.
RoundPlan two_nodes() { return make_plan({node("n0", 1, 0, 2, 2), node("n1", 1, 1, 2, 2)}, 0, 0); }

// A store whose connection is gone.
class LostStore : public store::MemoryStore {
 public:
  std::optional<std::string> try_get(const std::string&) override {
    throw store::StoreUnavailable("connection reset by peer");
  }
};

}  // namespace

TEST_CASE("garbage in the store is a rendezvous error naming the version, not an internal one") {
  store::MemoryStore bad_round;
  bad_round.set(JobKeys::current_round(), "seven");
  auto [code, message] = join_failure(bad_round);
  CHECK(code == exit_code::kRendezvousFailed);
  CHECK_THAT(message, Catch::Contains("'seven' is not a round number") && Catch::Contains(kVersionHint));

  store::MemoryStore bad_plan;
  bad_plan.set(JobKeys::current_round(), "0");
  bad_plan.set(JobKeys::open(0), "1");
  bad_plan.set(JobKeys::plan(0), R"({"round": "zero"})");
  std::tie(code, message) = join_failure(bad_plan);
  CHECK(code == exit_code::kRendezvousFailed);
  CHECK_THAT(message, Catch::Contains("malformed plan record") && Catch::Contains(kVersionHint));
}

TEST_CASE("the peer watch turns a malformed abort record into a stop reason, never a throw") {
  store::MemoryStore store;
  store.set(JobKeys::abort(0), "{garbage");
  RoundCheckContext watch{store, store, false, 0, 2, "h0", "h0:29400"};
  RoundFindings trouble;
  auto reason = check_round(watch, two_nodes(), 0, trouble);
  REQUIRE(reason);
  CHECK_THAT(*reason, Catch::Contains("malformed abort record") && Catch::Contains(kVersionHint));
  CHECK(trouble.bad_record == *reason);
  CHECK(trouble.store_lost.empty());
}

TEST_CASE("the peer watch turns a lost store into a stop reason, never a throw") {
  LostStore store;
  RoundCheckContext watch{store, store, true, 0, 2, "h0", "h0:29400"};
  RoundFindings trouble;
  auto reason = check_round(watch, two_nodes(), 0, trouble);
  REQUIRE(reason);
  CHECK(*reason == "lost the agent store at h0:29400 (connection reset by peer)");
  CHECK(trouble.store_lost == "connection reset by peer");
}

TEST_CASE("the leader's watch publishes a lost peer and a waiting node") {
  store::MemoryStore store;
  RoundCheckContext watch{store, store, true, 1, 3, "h0", "h0:29400"};
  RoundFindings trouble;
  CHECK_FALSE(check_round(watch, two_nodes(), 0, trouble));
  store.set(std::string(store::kDroppedPrefix) + "n1", "heartbeat timeout");
  auto reason = check_round(watch, two_nodes(), 0, trouble);
  CHECK(reason == std::optional<std::string>("node 1 (n1) was lost: heartbeat timeout"));
  AbortRecord lost = abort_from_json(store.get(JobKeys::abort(0), store::Duration(100)));
  CHECK(lost.failure == FailureKind::kNodeLost);
  CHECK_FALSE(lost.final);  // restart_count 0 < max_restarts 1

  store::MemoryStore grow;
  RoundCheckContext leader{grow, grow, true, 0, 3, "h0", "h0:29400"};
  grow.add(JobKeys::waiting(0), 1);
  reason = check_round(leader, two_nodes(), 0, trouble);
  REQUIRE(reason);
  CHECK_THAT(*reason, Catch::Contains("a new node is waiting to join"));
  CHECK(trouble.bad_record.empty());
  CHECK(trouble.store_lost.empty());
}

namespace {
// Counts the reads of __dropped__/ names.
class CountingStore : public store::MemoryStore {
 public:
  std::optional<std::string> try_get(const std::string& key) override {
    if (key.rfind(store::kDroppedPrefix, 0) == 0) ++name_reads;
    return MemoryStore::try_get(key);
  }
  int name_reads = 0;
};
}  // namespace

TEST_CASE("the leader's watch looks at the peers' names only when the store's drop count moved") {
  CountingStore store;
  RoundCheckContext watch{store, store, true, 1, 2, "h0", "h0:29400"};
  RoundFindings state;
  store.add(store::kDroppedCountKey, 1);  // someone else's drop, before the round
  CHECK_FALSE(check_round(watch, two_nodes(), 0, state));
  CHECK(store.name_reads == 1);  // a new count: n1's name looked at
  for (int tick = 0; tick < 5; ++tick) CHECK_FALSE(check_round(watch, two_nodes(), 0, state));
  CHECK(store.name_reads == 1);  // the same count: no name looked at
  store.set(std::string(store::kDroppedPrefix) + "n1", "connection lost");
  store.add(store::kDroppedCountKey, 1);
  CHECK(check_round(watch, two_nodes(), 0, state) ==
        std::optional<std::string>("node 1 (n1) was lost: connection lost"));
}

TEST_CASE("a worker's communication error looks for a better root cause on any node") {
  store::MemoryStore store;
  RoundCheckContext follower{store, store, false, 0, 2, "h1", "h0:29400"};
  RoundFindings state;
  CHECK_FALSE(find_root_cause(follower, two_nodes(), 1, state));  // nothing known: its own failure
  CHECK_FALSE(state.abort);
  // A peer the store dropped: published as lost, by a follower too.
  store.set(std::string(store::kDroppedPrefix) + "n0", "connection lost");
  auto reason = find_root_cause(follower, two_nodes(), 1, state);
  REQUIRE(reason);
  CHECK_THAT(*reason, Catch::Contains("node 0 (") && Catch::Contains("was lost: connection lost"));
  REQUIRE(state.abort);
  CHECK(state.abort->failure == FailureKind::kNodeLost);
  CHECK(state.abort->final);  // max_restarts 0
  CHECK(abort_from_json(store.get(JobKeys::abort(0), store::Duration(100))).failure == FailureKind::kNodeLost);
  // A lost store is a better cause as well.
  LostStore lost;
  RoundCheckContext cut{lost, lost, false, 0, 2, "h1", "h0:29400"};
  RoundFindings lost_state;
  CHECK(find_root_cause(cut, two_nodes(), 1, lost_state));
  CHECK(lost_state.store_lost == "connection reset by peer");
}

TEST_CASE("an abort record read by the watch stays known after the store is gone") {
  store::MemoryStore store;
  RoundCheckContext watch{store, store, false, 0, 2, "h1", "h0:29400"};
  RoundFindings state;
  WorkerOutcome root;
  root.rank = 0;
  root.status.code = 3;
  publish_abort(store, 0, AbortRecord::worker_failure(root, 0, "h0", true));
  REQUIRE(check_round(watch, two_nodes(), 1, state));
  LostStore lost;
  RoundCheckContext cut{lost, lost, false, 0, 2, "h1", "h0:29400"};
  CHECK(check_round(cut, two_nodes(), 1, state));  // the store is gone now
  REQUIRE(state.abort);
  CHECK(state.abort->exit_code == 3);
  CHECK(state.abort->final);
}

TEST_CASE("leaderless rendezvous (etcd): each round elects its leader, a later round needs none of round 0's") {
  store::MemoryStore store;
  auto conf = fast_conf();
  auto join = [&](const std::string& name, int round, int restarts, Regroup regroup = {}) {
    Rendezvous r(store, elected(conf, name, 1, 2, [](const std::string&) { return false; }), {});
    return seated(r.join(node(name, 1, -1, 1, 2), round, restarts, regroup));
  };
  auto b = std::async(std::launch::async, [&] { return join("b", -1, 0); });
  RoundPlan a0 = join("a", -1, 0);
  RoundPlan b0 = b.get();
  CHECK(a0.round == 0);
  CHECK(a0.nodes.size() == 2);
  CHECK(b0.world_size == 2);
  const std::string leader0 = *store.try_get(JobKeys::leader(0));
  CHECK((leader0 == "a" || leader0 == "b"));
  // Round 0's leader is gone; the survivor claims round 1 and forms it alone.
  const std::string survivor = leader0 == "a" ? "b" : "a";
  RoundPlan r1 = join(survivor, 1, 1, Regroup{1, 0.1});
  CHECK(r1.round == 1);
  CHECK(r1.restart_count == 1);
  REQUIRE(r1.nodes.size() == 1);
  CHECK(r1.nodes[0].info.name == survivor);
  CHECK(*store.try_get(JobKeys::leader(1)) == survivor);
  CHECK(*store.try_get(JobKeys::current_round()) == "1");
}

TEST_CASE("leaderless rendezvous (etcd): a round whose leader is lost before its plan is left for the next") {
  store::MemoryStore store;
  auto conf = fast_conf();
  // "a" claimed round 0 and opened it, then died before writing the plan (its lease expired).
  store.set(JobKeys::leader(0), "a");
  store.set(JobKeys::open(0), "1");
  store.set(JobKeys::current_round(), "0");
  store.add(JobKeys::ticket(0), 1);
  Rendezvous b(store, elected(conf, "b", 1, 2, [](const std::string& name) { return name == "a"; }), {});
  RoundPlan plan = seated(b.join(node("b", 1, -1, 1, 2), -1, 0));
  CHECK(plan.round == 1);
  REQUIRE(plan.nodes.size() == 1);
  CHECK(plan.nodes[0].info.name == "b");
  CHECK(*store.try_get(JobKeys::leader(1)) == "b");
  CHECK_FALSE(store.check({JobKeys::plan(0)}));  // round 0 never got a plan
  // Without the liveness check the same follower waits for round 0's plan until the timeout.
  store::MemoryStore stale;
  stale.set(JobKeys::leader(0), "a");
  stale.set(JobKeys::open(0), "1");
  stale.set(JobKeys::current_round(), "0");
  conf.join_timeout_s = 1;
  Rendezvous c(stale, elected(conf, "c", 1, 2, [](const std::string&) { return false; }), {});
  CHECK_THROWS_WITH(seated(c.join(node("c", 1, -1, 1, 2), -1, 0)), Catch::Contains("the plan of round 0"));
}
