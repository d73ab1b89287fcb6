#include "launcher/multinode/preflight_screen.hpp"

#include <fmt/format.h>

#include "launcher/preflight/verdict.hpp"

namespace ddp::launch::multinode {
namespace {

std::string who(const NodeInfo& n) {
  return n.requested_rank >= 0 ? fmt::format("node {} ({})", n.requested_rank, n.host)
                               : fmt::format("node {} (pid {})", n.host, n.pid);
}

}  // namespace

Screened screen_nodes(const std::vector<NodeInfo>& joined, int nnodes_min, double cpu_warn, double cpu_fail) {
  Screened s;
  std::vector<double> rates;
  for (const auto& n : joined)
    if (n.cpu_gflops > 0) rates.push_back(n.cpu_gflops);
  const double nodes_median = preflight::median(rates);
  for (size_t i = 0; i < joined.size(); ++i) {
    const NodeInfo& n = joined[i];
    const double ratio = nodes_median > 0 && n.cpu_gflops > 0 ? n.cpu_gflops / nodes_median : 1;
    const std::string cpu = fmt::format("cpu: its median core {:.2f} GFLOP/s, {:.2f} of the nodes' median {:.2f}",
                                        n.cpu_gflops, ratio, nodes_median);
    if (!n.preflight_failed.empty()) {
      s.left_out.push_back(i);
      s.why.push_back(fmt::format("{}: its pre-flight check failed: {}", who(n), n.preflight_failed));
    } else if (rates.size() > 1 && ratio < cpu_fail) {
      s.left_out.push_back(i);
      s.why.push_back(fmt::format("{}: {} (fail below {:g})", who(n), cpu, cpu_fail));
    } else {
      s.kept.push_back(i);
      if (rates.size() > 1 && ratio < cpu_warn)
        s.warnings.push_back(fmt::format("{}: {} (warn below {:g})", who(n), cpu, cpu_warn));
    }
  }
  if (!s.left_out.empty() && static_cast<int>(s.kept.size()) < nnodes_min) {
    std::string all;
    for (const auto& w : s.why) all += (all.empty() ? "" : "; ") + w;
    s.error = fmt::format(
        "pre-flight: {} of {} node{} failed, leaving {}, fewer than the {} the job needs (--nnodes MIN); no worker "
        "started: {}",
        s.left_out.size(), joined.size(), joined.size() == 1 ? "" : "s", s.kept.size(), nnodes_min, all);
  }
  return s;
}

}  // namespace ddp::launch::multinode
