// Rendezvous records and the pure rules that turn the nodes that joined a round into a
// plan: group ranks (explicit --node-rank first, then a node's previous rank, then join
// order), RANK bases as prefix sums of each node's nproc (heterogeneous nodes work), and
// the workers' store at group rank 0's address and port. Also the abort record every node
// reads to stop, restart or report together. JSON on the wire; no I/O here. A record
// that cannot be read throws LaunchError(kRendezvousFailed) asking whether every node runs
// the same ddp-launch version.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/report/failure_report.hpp"

namespace ddp::launch::multinode {

// What a launcher says about itself when it joins a round.
struct NodeInfo {
  std::string name;          // unique per launcher: the store's liveness name
  std::string host;          // for reports
  std::string addr;          // where its workers' store would listen if it becomes rank 0
  int worker_port = 0;       // a free port on that node, for the workers' store
  bool agent_store = false;  // its launcher listens on worker_port (--worker-store=launcher)
  int nproc = 1;
  std::string role = "default";  // --role: ROLE_RANK/ROLE_WORLD_SIZE count within a role
  int requested_rank = -1;       // explicit --node-rank, or -1
  int previous_rank = -1;        // its rank in the previous round, or -1
  int nnodes_min = 1;
  int nnodes_max = 1;
  int max_restarts = 0;
  long pid = 0;
  std::string status_url;  // its status endpoint, "http://ADDR:PORT" ("": none; older launchers send none)
};

struct PlannedNode {
  NodeInfo info;
  int group_rank = 0;
  int base_rank = 0;  // RANK of its local rank 0
};

struct RoundPlan {
  int round = 0;
  int restart_count = 0;
  std::vector<PlannedNode> nodes;  // by group rank
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;
  std::string error;  // non-empty: the round failed; every node exits with it

  const PlannedNode* find(const std::string& name) const;
};

// Ranks and addresses for the nodes that joined (in join order). Sets plan.error instead
// of throwing when the nodes disagree (duplicate --node-rank, different --nnodes or
// --max-restarts, a rank out of range).
RoundPlan make_plan(const std::vector<NodeInfo>& joined, int round, int restart_count);

// ROLE_RANK of node `group_rank`'s local rank 0, and ROLE_WORLD_SIZE: its role's workers
// counted in group-rank order, as torchrun numbers them.
std::pair<int, int> role_ranks(const RoundPlan& plan, int group_rank);

// Why a round ended early. Written once per round (compare-and-set: the first one wins).
struct AbortRecord {
  // A worker of node `node_rank` failed, or hung (is_hang(root.failure): the verdict, 119);
  // final: no restart left.
  static AbortRecord worker_failure(const report::WorkerOutcome& root, int node_rank, const std::string& host,
                                    bool final);
  // The store lost node `node_rank` (`why`: the store's reason) while it had not finished.
  static AbortRecord lost_node(int node_rank, const std::string& host, const std::string& why, bool final);
  // A new node waits to join: every node restarts in a new round (not counted as a restart).
  static AbortRecord membership_change(int node_rank, const std::string& host);
  // Node `node_rank` got a stop signal: every node exits with 128+signal.
  // why: what the stop's asker said (base/stop_note), told instead of the signal's name.
  static AbortRecord stopped_by_signal(int node_rank, const std::string& host, int signal,
                                       const std::optional<std::string>& why = std::nullopt);

  // The root cause as the other nodes report it.
  report::RemoteFailure remote_failure() const;

  // crash, signal, hang, desync (a worker's), node_lost, stopped or membership. On the wire
  // as "failure" (its name) and, for older launchers, "kind" (0 a worker or a stop signal,
  // 1 a lost node, 2 membership); a record without "failure" gets it from those.
  FailureKind failure = FailureKind::kCrash;
  std::string reason;  // one line for humans
  int node_rank = -1;  // the node where it happened
  std::string host;
  int rank = -1;  // the failed worker (crash, signal, hang, desync)
  int local_rank = -1;
  long pid = 0;
  int exit_code = 1;   // what every launcher exits with if this is final
  std::string status;  // "exit code 3" / "signal 9 (SIGKILL)"
  std::string error;   // the worker's error-file message, if any
  std::string traceback;
  std::string hang;         // a hang's verdict line ("": not a hang); absent in older records
  std::string stacks_file;  // the culprit's stacks file on node `host` (a hang); likewise
  // A stop the stop's asker explained (a many-host launch's launching machine, which stops
  // every host for it): what it said. Every node then reports it as its own stop.
  std::string stop_note;
  bool final = false;  // no restarts left: everyone exits with exit_code
};

std::string to_json(const NodeInfo& info);
std::string to_json(const RoundPlan& plan);
std::string to_json(const AbortRecord& record);
// Parsers throw LaunchError(kRendezvousFailed) on malformed input (see malformed_record).
NodeInfo node_info_from_json(const std::string& text);
RoundPlan plan_from_json(const std::string& text);
AbortRecord abort_from_json(const std::string& text);

// Throws LaunchError(kRendezvousFailed): `what` (e.g. "plan record") read from the store
// cannot be understood, with `detail` and the version hint.
[[noreturn]] void malformed_record(const std::string& what, const std::string& detail);

}  // namespace ddp::launch::multinode
