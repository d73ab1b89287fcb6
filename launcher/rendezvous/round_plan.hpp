// Rendezvous records and the pure rules that turn the nodes that joined a round into a
// plan: group ranks (explicit --node-rank first, then a node's previous rank, then join
// order), RANK bases as prefix sums of each node's nproc (heterogeneous nodes work), ROLE
// ranks within each role, and the workers' store at group rank 0's address and port (the
// abort record is in abort_record.hpp). A plan is published as records a node reads in
// O(1) each, so that a round of K nodes moves O(K) bytes, not O(K^2): the summary (no
// nodes), each node's seat (keyed by its join ticket) and the whole node list (read only by
// those that need every node). JSON on the wire; no I/O here; linear in the nodes. A record
// that cannot be read throws LaunchError(kRendezvousFailed) asking whether every node runs
// the same ddp-launch version.
#pragma once

#include <string>
#include <vector>

namespace ddp::launch::rendezvous {

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
  // Its pre-flight (--preflight, before its first join): the checks it failed ("": none, or
  // not run), its median core's matrix-multiply rate and its GPUs' NCCL all-reduce bus
  // bandwidth (0: not measured), which the leader compares with the other nodes'.
  std::string preflight_failed;
  double cpu_gflops = 0;
  double nccl_busbw_gbps = 0;
  int probe_port = 0;  // its pre-flight link probe (link_round.hpp; 0: none)
  // Seconds since each of its strikes (its own worker was a round's root cause), newest last:
  // the leader leaves it out at --strikes COUNT within its window.
  std::vector<double> strike_ages_s;
  // Waits as a hot spare (it came when the job had its MAX nodes): sent with its joins.
  bool spare = false;
};

struct PlannedNode {
  NodeInfo info;
  int group_rank = 0;
  int base_rank = 0;        // RANK of its local rank 0
  int role_base_rank = 0;   // ROLE_RANK of its local rank 0: its role's workers before it
  int role_world_size = 0;  // ROLE_WORLD_SIZE: its role's workers in the round
  int ticket = 0;           // its join ticket (1 = joined first): the key of its seat record
};

struct RoundPlan {
  int round = 0;
  int restart_count = 0;
  int nnodes = 0;
  int tickets = 0;  // the join tickets the plan covers (1..tickets); a later joiner is not in it
  int world_size = 0;
  std::string master_addr;
  int master_port = 0;
  bool agent_store = false;  // group rank 0's launcher serves the workers' store
  std::string error;         // non-empty: the round failed; every node exits with it
  int error_code = 124;      // ... with this code (kRendezvousFailed; kPreflightFailed for pre-flight)
  // Nodes the leader left out of the round (their pre-flight failed), one line each, and (the
  // leader's plan only) the join tickets they held: they read why instead of a seat.
  std::vector<std::string> left_out;
  std::vector<int> left_out_tickets;
  std::vector<int> left_out_codes;  // (the leader's plan only) the exit code each left-out node exits with
  std::vector<int> spare_tickets;   // (the leader's plan only) joiners beyond MAX: they wait as spares
  // By group rank. Whole (nnodes entries) in the plan the leader makes and where a node read
  // the node list; a follower's own plan holds only itself (its seat), or nobody when it
  // joined too late.
  std::vector<PlannedNode> nodes;

  const PlannedNode* find(const std::string& name) const;
  bool whole() const { return static_cast<int>(nodes.size()) == nnodes; }
};

// Ranks and addresses for the nodes that joined (in join order). Sets plan.error instead
// of throwing when the nodes disagree (duplicate --node-rank, different --nnodes or
// --max-restarts, a rank out of range).
RoundPlan make_plan(const std::vector<NodeInfo>& joined, int round, int restart_count);

std::string to_json(const NodeInfo& info);
NodeInfo node_info_from_json(const std::string& text);

// The plan's records. The summary: everything but the nodes (a failed plan is only this).
std::string summary_to_json(const RoundPlan& plan);
RoundPlan plan_from_json(const std::string& summary);  // nodes empty
// A node's seat: its ranks (`self` is the node's own record; the seat does not repeat it).
std::string seat_to_json(const PlannedNode& node);
// Throws LaunchError with the leader's reason and the seat's exit code (kPreflightFailed,
// kStruckOut) when the seat says the node was left out.
PlannedNode seat_from_json(const std::string& text, NodeInfo self);
std::string left_out_seat_json(const std::string& why, int exit_code);
// The seat of a joiner the round has no room for (it had MAX nodes without it): a spare.
std::string spare_seat_json();
bool is_spare_seat(const std::string& text);
// Every node with its record, by group rank.
std::string nodes_to_json(const RoundPlan& plan);
std::vector<PlannedNode> nodes_from_json(const std::string& text);

// Throws LaunchError(kRendezvousFailed): `what` (e.g. "plan record") read from the store
// cannot be understood, with `detail` and the version hint.
[[noreturn]] void malformed_record(const std::string& what, const std::string& detail);

}  // namespace ddp::launch::rendezvous
