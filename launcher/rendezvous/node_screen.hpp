// The leader's screen of the nodes that joined a round (pure). Pre-flight (--preflight): a node
// whose own checks failed (NodeInfo::preflight_failed), whose median core multiplies below
// cpu_fail of the nodes' median (a throttled or oversubscribed node), or whose GPUs' NCCL
// all-reduce bus bandwidth is below nccl_fail of the nodes' median, is left out while --nnodes
// MIN nodes remain; otherwise the round fails naming them (every node exits 118); below
// cpu_warn or nccl_warn, a warning line only; nodes that measured nothing are not compared. Strikes
// (--strikes): a node with COUNT strikes within the window is left out (it exits 117) while MIN
// nodes remain, the most struck first; otherwise it is kept, with a warning line.
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/strike_policy.hpp"
#include "launcher/rendezvous/round_plan.hpp"

namespace ddp::launch::rendezvous {

struct ScreenRules {
  double cpu_warn = 0;  // 0, 0: the nodes' cores are not compared (no --preflight)
  double cpu_fail = 0;
  cli::StrikePolicy strikes;
  // The index (into joined) of the node that hosts the job's store, never left out: its failed
  // pre-flight check fails the round, its strikes are a warning. -1: none (etcd).
  long store_host = -1;
  double nccl_warn = 0;  // 0, 0: the bus bandwidths are not compared
  double nccl_fail = 0;
};

struct Screened {
  std::vector<size_t> kept;           // indices into joined, in join order
  std::vector<size_t> left_out;       // indices into joined
  std::vector<std::string> why;       // per left_out entry: "node 2 (host): cpu 4.1 GFLOP/s, 0.42 of ..."
  std::vector<int> codes;             // per left_out entry: the exit code it exits with (118, 117)
  std::vector<std::string> warnings;  // nodes kept but not clean, one console line each
  std::string error;                  // non-empty: fewer than nnodes_min would remain
};

Screened screen_nodes(const std::vector<NodeInfo>& joined, int nnodes_min, const ScreenRules& rules);

// "node 2 (host-c)" (an explicit --node-rank) or "node host-c (pid 4242)".
std::string node_label(const NodeInfo& n);

}  // namespace ddp::launch::rendezvous
