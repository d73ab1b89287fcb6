// The leader's pre-flight screen of the nodes that joined a round (pure): a node whose own
// checks failed (NodeInfo::preflight_failed), or whose median core multiplies below cpu_fail of
// the nodes' median (a throttled or oversubscribed node), is left out while --nnodes MIN nodes
// remain; otherwise the round fails naming them (every node exits 118). Below cpu_warn: a
// warning line only. Nodes that measured nothing (no --preflight) are not compared.
#pragma once

#include <string>
#include <vector>

#include "launcher/multinode/round_plan.hpp"

namespace ddp::launch::multinode {

struct Screened {
  std::vector<size_t> kept;           // indices into joined, in join order
  std::vector<size_t> left_out;       // indices into joined
  std::vector<std::string> why;       // per left_out entry: "node 2 (host): cpu 4.1 GFLOP/s, 0.42 of ..."
  std::vector<std::string> warnings;  // nodes kept but not clean, one line each
  std::string error;                  // non-empty: fewer than nnodes_min would remain
};

Screened screen_nodes(const std::vector<NodeInfo>& joined, int nnodes_min, double cpu_warn, double cpu_fail);

}  // namespace ddp::launch::multinode
