// The join protocol over a Store (the job's PrefixStore). The leader (the launcher hosting
// the store) opens round N, waits for nodes until nnodes_max joined, or nnodes_min joined
// and last_call_timeout passed, and publishes the plan; followers join the open round and
// read the plan, waiting for the next round when they came too late. Blocks, waiting in
// slices of at most the heartbeat interval (each wait also keeps the connection alive) and
// asking `interrupted` between slices. Throws LaunchError(kRendezvousFailed) on timeout, a
// failed plan or a malformed record, JobStopped when a launcher was stopped by a signal
// (the job's stop record), store::StoreError when the store is lost. With elect_leaders
// (etcd: nobody hosts the store) the leader of each round is whoever claims rN/leader first,
// so no round depends on a launcher of an earlier one.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

#include "launcher/cli/rendezvous_conf.hpp"
#include "launcher/multinode/abort_record.hpp"
#include "launcher/multinode/link_round.hpp"
#include "launcher/multinode/node_screen.hpp"
#include "launcher/multinode/round_plan.hpp"
#include "launcher/store/store.hpp"

namespace ddp::launch::multinode {

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

// Thrown by Rendezvous::join on a hot spare when the job ended without needing it.
struct JobEnded : std::runtime_error {
  explicit JobEnded(int code)
      : std::runtime_error("the job ended (exit " + std::to_string(code) + ") while this node waited as a hot spare"),
        exit_code(code) {}
  int exit_code;
};

// Thrown by Rendezvous::join when the job's stop record is there: every node exits with it.
struct JobStopped : std::runtime_error {
  explicit JobStopped(AbortRecord r) : std::runtime_error(r.reason), record(std::move(r)) {}
  AbortRecord record;
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

class Rendezvous {
 public:
  // interrupted() returns a signal number (non-zero) to give up waiting.
  Rendezvous(store::Store& job, const cli::RendezvousConf& conf, bool leader, int nnodes_min, int nnodes_max,
             std::function<int()> interrupted);

  // Joins round `round` (a follower's first call passes -1: the round currently open).
  // Returns a plan that contains `self`: whole for the round's leader, for group rank 0 and
  // in leaderless jobs; otherwise only `self`. `regroup` matters to the leader only.
  RoundPlan join(const NodeInfo& self, int round, int restart_count, Regroup regroup = {});

  // Every round elects its leader (compare-and-set of rN/leader to `name`) instead of the
  // store's host leading them all. `lost(leader)` says whether a launcher's liveness is gone:
  // a follower whose round's leader is lost before the plan moves on to the next round.
  void elect_leaders(std::string name, std::function<bool(const std::string&)> lost) {
    elect_name_ = std::move(name);
    leader_lost_ = std::move(lost);
  }

  // The leader leaves out nodes whose own pre-flight checks failed, whose median core is below
  // cpu_fail of the nodes' median, or that were struck out (node_screen.hpp), while MIN nodes
  // remain.
  void screen_nodes_with(const ScreenRules& rules) { screen_ = rules; }

  // Whether every node this leader left out has read why (rN/left_out_read): the leader keeps
  // the store up at the job's end until then (a node left out for its slowness may be slow to
  // read it). Store errors propagate.
  bool left_out_have_read();

  // --preflight's link checks (link_round.hpp): this node measures its ring link with `measure`
  // when its round's leader asks (before the plan), and as a leader it runs them in its first
  // round, with `conf`'s thresholds, before the screen.
  void check_links_with(MeasureLinks measure, const cli::PreflightConf& conf) {
    measure_links_ = std::move(measure);
    link_conf_ = conf;
  }

  // A node without --node-rank that joins when the job runs with its MAX nodes waits as a hot
  // spare (one with a --node-rank fails: a rank given twice): it joins every later round and takes a seat when one is
  // free (a node lost or left out). `became_spare(round)` runs once, when it starts waiting (the agent warms its
  // standbys then). A spare waits without the join timeout; the job's end throws JobEnded.
  void on_spare(std::function<void(int)> became_spare) { became_spare_ = std::move(became_spare); }
  bool spare() const { return spare_; }

  // Waits until `key` exists or the deadline passes, in heartbeat-sized slices.
  bool wait_key(const std::string& key, std::chrono::steady_clock::time_point deadline);

 private:
  RoundPlan lead(const NodeInfo& self, int round, int restart_count, Regroup regroup);
  RoundPlan follow(const NodeInfo& self, int round);
  RoundPlan join_elected(const NodeInfo& self, int round, int restart_count, Regroup regroup);
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
  void check_interrupted();  // also throws JobStopped; a spare, JobEnded
  // A follower that joined round `round` with `ticket`: measures its link if the leader asks
  // before the plan is there.
  void answer_link_check(int round, long ticket, std::chrono::steady_clock::time_point deadline);
  // Round `round` had its MAX nodes without this one: wait as a spare from now on.
  void become_spare(const NodeInfo& self, int round);
  [[noreturn]] void follow_timed_out(const std::string& what) const;
  // Who a follower waits for when round `round` has no plan: how many joined, how many it
  // needs, and its leader (the round's first join record).
  std::string who_blocks(int round);

  store::Store& job_;
  cli::RendezvousConf conf_;
  bool leader_;
  int nnodes_min_;
  int nnodes_max_;
  std::function<int()> interrupted_;
  std::string elect_name_;  // non-empty: elect each round's leader
  std::function<bool(const std::string&)> leader_lost_;
  ScreenRules screen_;
  std::function<void(int)> became_spare_;
  MeasureLinks measure_links_;  // empty: no link checks
  cli::PreflightConf link_conf_;
  bool links_checked_ = false;                  // a leader checks the links of its first round only
  std::vector<std::pair<int, long>> left_out_;  // (round, nodes) this leader left out
  bool spare_ = false;                          // waits as a hot spare (until a round seats it)
};

}  // namespace ddp::launch::multinode
