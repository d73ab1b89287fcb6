// The join protocol over a Store (the job's PrefixStore). The leader (the launcher hosting
// the store) opens round N, waits for nodes until nnodes_max joined, or nnodes_min joined
// and last_call_timeout passed, and publishes the plan; followers join the open round and
// read the plan, waiting for the next round when they came too late. Blocks, waiting in
// slices of at most the heartbeat interval (each wait also keeps the connection alive) and
// asking `interrupted` between slices. A join returns what it ended in (JoinOutcome); it
// throws LaunchError(kRendezvousFailed) on timeout, a failed plan or a malformed record,
// LaunchError(kPreflightFailed, kStruckOut) when the leader left this node out, and
// store::StoreError when the store is lost. Configured once, by a RendezvousPolicy.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <variant>

#include "launcher/cli/rendezvous_conf.hpp"
#include "launcher/rendezvous/abort_record.hpp"
#include "launcher/rendezvous/link_round.hpp"
#include "launcher/rendezvous/node_screen.hpp"
#include "launcher/rendezvous/round_plan.hpp"
#include "launcher/store/store.hpp"

namespace ddp::launch::rendezvous {

// Keys of one job, relative to its PrefixStore.
struct JobKeys {
  static std::string current_round() { return "current_round"; }
  static std::string open(int r) { return "r" + std::to_string(r) + "/open"; }
  static std::string ticket(int r) { return "r" + std::to_string(r) + "/ticket"; }
  static std::string join(int r, long t) { return "r" + std::to_string(r) + "/join/" + std::to_string(t); }
  static std::string leader(int r) { return "r" + std::to_string(r) + "/leader"; }
  // The plan's records (round_plan.hpp): its summary, each joiner's seat, every node.
  static std::string plan(int r) { return "r" + std::to_string(r) + "/plan"; }
  static std::string seat(int r, long t) { return "r" + std::to_string(r) + "/seat/" + std::to_string(t); }
  static std::string nodes(int r) { return "r" + std::to_string(r) + "/nodes"; }
  static std::string plan_read(int r) { return "r" + std::to_string(r) + "/plan_read"; }
  static std::string left_out_read(int r) { return "r" + std::to_string(r) + "/left_out_read"; }  // and why
  static std::string abort(int r) { return "r" + std::to_string(r) + "/abort"; }
  static std::string waiting(int r) { return "r" + std::to_string(r) + "/waiting"; }
  static std::string done(int r, int g) { return "r" + std::to_string(r) + "/done/" + std::to_string(g); }
  static std::string done_count(int r) { return "r" + std::to_string(r) + "/done_count"; }
  static std::string exited(int r, int g) { return "r" + std::to_string(r) + "/exited/" + std::to_string(g); }
  static std::string exited_count(int r) { return "r" + std::to_string(r) + "/exited_count"; }
  // The job's stop record (a final stopped_by_signal AbortRecord; the first one wins): ends
  // the job on every node whatever round each is in, even when the round already recorded
  // a restart. stop_seen: launcher `name` has read it (the leader waits for that).
  static std::string stop() { return "stop"; }
  static std::string stop_seen(const std::string& name) { return "stop_seen/" + name; }
  // Hot spares: how many nodes wait as spares after round r (it had MAX nodes when they came);
  // the job's end (its exit code, set by the leader as the job ends) and how many spares read it.
  static std::string spares(int r) { return "r" + std::to_string(r) + "/spares"; }
  static std::string spare(int r, long k) {
    return "r" + std::to_string(r) + "/spare/" + std::to_string(k);
  }  // its name
  static std::string ended() { return "ended"; }
  static std::string ended_seen() { return "ended_seen"; }
};

// After a restart the leader knows who should come back: `expected` nodes (at least
// nnodes_min) and `spares` hot spares (then more than nnodes_max may join: the plan keeps the
// previous round's nodes first and the rest stay spares). The round closes as soon as they are
// all there, or two heartbeat intervals after the expected nodes are (a spare that is gone is
// not waited for); with fewer (but at least nnodes_min) it closes `wait_s` after nnodes_min
// joined instead of the last call. A round with nnodes_min joined never fails on the join
// timeout: it closes.
struct Regroup {
  int expected = 0;  // 0: a first round, no expectation
  double wait_s = 0;
  int spares = 0;
};

// Who leads this launcher's rounds: the store's host (every round), or another launcher (this
// one follows), or whoever claims each round first (etcd: nobody hosts the store, so no round
// depends on a launcher of an earlier one). kElected: `name` is this launcher's claim, and
// `lost(leader)` says whether a launcher's liveness is gone (a follower whose round's leader is
// lost before the plan moves on to the next round).
struct LeaderMode {
  enum class Kind { kStoreHost, kFollower, kElected };
  Kind kind = Kind::kFollower;
  std::string name;
  std::function<bool(const std::string&)> lost;
};

// --preflight's link checks (link_round.hpp): this node measures its ring link with `measure`
// when its round's leader asks (before the plan); as a leader it runs them in its first round,
// with `conf`'s thresholds, before the screen.
struct LinkCheck {
  MeasureLinks measure;
  cli::PreflightConf conf;
};

// How this launcher's rendezvous runs, set once: the leader mode, the round's bounds (the job's
// MIN and MAX nodes), the timeouts, the screen (the leader leaves out nodes whose own pre-flight
// checks failed, whose median core is below cpu_fail of the nodes' median, or that were struck
// out, node_screen.hpp, while MIN nodes remain) and the link checks (none without --preflight).
struct RendezvousPolicy {
  LeaderMode leader;
  int nnodes_min = 1;
  int nnodes_max = 1;
  cli::RendezvousConf conf;
  ScreenRules screen;
  std::optional<LinkCheck> links;
};

// What a join ends in. Seated: the round's plan, which contains this node. BecameSpare: the
// round had its MAX nodes without this one (a node without --node-rank that joined then): it
// now waits as a hot spare: join again from round + 1 with restart_count (the agent warms its
// standbys first); a spare waits without the join timeout. SpareReleased: the job ended
// (exit_code) while this node waited as a spare. StopRecorded: a launcher was stopped by a
// signal (the job's stop record): every node exits with it. Interrupted: `interrupted`
// returned this signal while the join waited.
struct Seated {
  RoundPlan plan;
};
struct BecameSpare {
  int round = 0;
  int restart_count = 0;
};
struct SpareReleased {
  int exit_code = 0;
};
struct StopRecorded {
  AbortRecord record;
};
struct Interrupted {
  int signal = 0;
};
using JoinOutcome = std::variant<Seated, BecameSpare, SpareReleased, StopRecorded, Interrupted>;

class Rendezvous {
 public:
  // interrupted() returns a signal number (non-zero) to give up waiting.
  Rendezvous(store::Store& job, RendezvousPolicy policy, std::function<int()> interrupted);

  // Joins round `round` (a follower's first call passes -1: the round currently open). A Seated
  // plan is whole for the round's leader, for group rank 0 and in leaderless jobs; otherwise
  // it holds only `self`. `regroup` matters to the leader only.
  JoinOutcome join(const NodeInfo& self, int round, int restart_count, Regroup regroup = {});

  // Whether every node this leader left out has read why (rN/left_out_read): the leader keeps
  // the store up at the job's end until then (a node left out for its slowness may be slow to
  // read it). Store errors propagate.
  bool left_out_have_read();

  // Waits until `key` exists or the deadline passes, in heartbeat-sized slices.
  bool wait_key(const std::string& key, std::chrono::steady_clock::time_point deadline);

 private:
  bool elected() const { return policy_.leader.kind == LeaderMode::Kind::kElected; }
  RoundPlan lead(const NodeInfo& self, int round, int restart_count, Regroup regroup);
  // The leader opens round `round` with its own join (always ticket 1) and waits until the
  // round may close: everyone it wants joined, or enough and the last call (or the spares'
  // grace) passed; without MIN nodes at the join timeout the round fails. Returns how many joined.
  long gather(const NodeInfo& self, int round, Regroup regroup);
  JoinOutcome follow(const NodeInfo& self, int round);
  JoinOutcome join_elected(const NodeInfo& self, int round, int restart_count, Regroup regroup);
  // Joins round `round` as a follower and returns its plan; a plan without `self` means the
  // round was full (this node then waits for the next, counted in rN/waiting).
  // Elected rounds: nullopt when the round's leader was lost before its plan.
  std::optional<RoundPlan> follow_one(const NodeInfo& self, int round, std::chrono::steady_clock::time_point deadline);
  enum class RoundWait { kFound, kTimedOut, kLeaderLost };
  // wait_key, also watching (elected rounds only) the liveness of round `round`'s leader.
  RoundWait wait_round_key(const std::string& key, int round, std::chrono::steady_clock::time_point deadline);
  // Publishes a failed plan naming who joined (and who is missing), then throws.
  // make_plan over the nodes the pre-flight screen keeps (every node without --preflight).
  RoundPlan plan_round(const std::vector<NodeInfo>& joined, int round, int restart_count);
  // Writes the plan's records: the node list and the seats first, the summary (what
  // followers wait for) last.
  void publish(const RoundPlan& plan);
  // A follower's part of the plan whose summary it read: its own seat, or every node. Throws
  // LaunchError(kPreflightFailed) when the leader left it out.
  void read_seat(const NodeInfo& self, int round, long ticket, RoundPlan& plan);
  [[noreturn]] void fail_join_timeout(const NodeInfo& self, int round, long count);
  // Ends the join early (a private unwinding that join() turns into its outcome) on a signal,
  // the job's stop record, or (a spare) the job's end.
  void check_interrupted();
  // A follower that joined round `round` with `ticket`: measures its link if the leader asks
  // before the plan is there.
  void answer_link_check(int round, long ticket, std::chrono::steady_clock::time_point deadline);
  // Round `round` had its MAX nodes without this one: wait as a spare from now on. Whether
  // this node just became one (it was not a spare before).
  bool become_spare(const NodeInfo& self, int round);
  [[noreturn]] void follow_timed_out(const std::string& what) const;
  // Who a follower waits for when round `round` has no plan: how many joined, how many it
  // needs, and its leader (the round's first join record).
  std::string who_blocks(int round);

  store::Store& job_;
  RendezvousPolicy policy_;
  std::function<int()> interrupted_;
  bool links_checked_ = false;                  // a leader checks the links of its first round only
  std::vector<std::pair<int, long>> left_out_;  // (round, nodes) this leader left out
  bool spare_ = false;                          // waits as a hot spare (until a round seats it)
};

}  // namespace ddp::launch::rendezvous
