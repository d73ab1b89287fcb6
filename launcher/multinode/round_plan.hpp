// Rendezvous records and the pure rules that turn the nodes that joined a round into a
// plan: group ranks (explicit --node-rank first, then a node's previous rank, then join
// order), RANK bases as prefix sums of each node's nproc (heterogeneous nodes work), and
// the workers' store at group rank 0's address and port (the abort record is in
// abort_record.hpp). JSON on the wire; no I/O here. A record that cannot be read throws
// LaunchError(kRendezvousFailed) asking whether every node runs the same ddp-launch version.
#pragma once

#include <string>
#include <utility>
#include <vector>

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

std::string to_json(const NodeInfo& info);
std::string to_json(const RoundPlan& plan);
// Parsers throw LaunchError(kRendezvousFailed) on malformed input (see malformed_record).
NodeInfo node_info_from_json(const std::string& text);
RoundPlan plan_from_json(const std::string& text);

// Throws LaunchError(kRendezvousFailed): `what` (e.g. "plan record") read from the store
// cannot be understood, with `detail` and the version hint.
[[noreturn]] void malformed_record(const std::string& what, const std::string& detail);

}  // namespace ddp::launch::multinode
