#include "launcher/multinode/node_screen.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/preflight/verdict.hpp"

namespace ddp::launch::multinode {
namespace {

// Pre-flight: failed checks and slow CPUs against the nodes' median.
void screen_preflight(const std::vector<NodeInfo>& joined, int nnodes_min, const ScreenRules& rules, Screened& s) {
  std::vector<double> rates;
  for (const auto& n : joined)
    if (n.cpu_gflops > 0) rates.push_back(n.cpu_gflops);
  const double nodes_median = preflight::median(rates);
  for (size_t i = 0; i < joined.size(); ++i) {
    const NodeInfo& n = joined[i];
    const double ratio = nodes_median > 0 && n.cpu_gflops > 0 ? n.cpu_gflops / nodes_median : 1;
    const std::string cpu = fmt::format("cpu: its median core {:.2f} GFLOP/s, {:.2f} of the nodes' median {:.2f}",
                                        n.cpu_gflops, ratio, nodes_median);
    std::string why;
    if (!n.preflight_failed.empty())
      why = fmt::format("{}: its pre-flight check failed: {}", node_label(n), n.preflight_failed);
    else if (rates.size() > 1 && ratio < rules.cpu_fail)
      why = fmt::format("{}: {} (fail below {:g})", node_label(n), cpu, rules.cpu_fail);
    if (!why.empty() && static_cast<long>(i) == rules.store_host && !n.preflight_failed.empty()) {
      s.error = fmt::format(
          "pre-flight: the node that hosts the job's store failed, so the job cannot run without "
          "it; no worker started: {}",
          why);
      return;
    }
    if (why.empty() || static_cast<long>(i) == rules.store_host) {  // the store's host: a slow CPU warns
      s.kept.push_back(i);
      if (!why.empty()) s.warnings.push_back("preflight: warn " + why + "; kept: it hosts the job's store");
      else if (rates.size() > 1 && ratio < rules.cpu_warn)
        s.warnings.push_back(
            fmt::format("preflight: warn {}: {} (warn below {:g})", node_label(n), cpu, rules.cpu_warn));
      continue;
    }
    s.left_out.push_back(i);
    s.why.push_back(why);
    s.codes.push_back(exit_code::kPreflightFailed);
  }
  if (!s.left_out.empty() && static_cast<int>(s.kept.size()) < nnodes_min) {
    std::string all;
    for (const auto& w : s.why) all += (all.empty() ? "" : "; ") + w;
    s.error = fmt::format(
        "pre-flight: {} of {} node{} failed, leaving {}, fewer than the {} the job needs (--nnodes MIN); no worker "
        "started: {}",
        s.left_out.size(), joined.size(), joined.size() == 1 ? "" : "s", s.kept.size(), nnodes_min, all);
  }
}

// Strikes: the kept nodes at the policy's count, most struck first, while MIN nodes remain.
void screen_strikes(const std::vector<NodeInfo>& joined, int nnodes_min, const ScreenRules& rules, Screened& s) {
  const cli::StrikePolicy& policy = rules.strikes;
  std::vector<std::pair<int, size_t>> struck;  // (strikes within the window, index into joined)
  for (size_t i : s.kept)
    if (int n = policy.within_window(joined[i].strike_ages_s); n >= policy.count) struck.emplace_back(n, i);
  std::stable_sort(struck.begin(), struck.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [strikes, i] : struck) {
    const std::string what = fmt::format(
        "{}: struck out: its workers were the root cause {} times within {:g} s "
        "(--strikes {}/{:g})",
        node_label(joined[i]), strikes, policy.window_s, policy.count, policy.window_s);
    if (static_cast<long>(i) == rules.store_host) {
      s.warnings.push_back("strikes: " + what + "; kept: it hosts the job's store");
      continue;
    }
    if (static_cast<int>(s.kept.size()) <= nnodes_min) {
      s.warnings.push_back(
          fmt::format("strikes: {}; kept: without it fewer than the {} nodes the job needs (--nnodes MIN) "
                      "would remain",
                      what, nnodes_min));
      continue;
    }
    s.kept.erase(std::find(s.kept.begin(), s.kept.end(), i));
    s.left_out.push_back(i);
    s.why.push_back(what);
    s.codes.push_back(exit_code::kStruckOut);
  }
}

}  // namespace

std::string node_label(const NodeInfo& n) {
  return n.requested_rank >= 0 ? fmt::format("node {} ({})", n.requested_rank, n.host)
                               : fmt::format("node {} (pid {})", n.host, n.pid);
}

Screened screen_nodes(const std::vector<NodeInfo>& joined, int nnodes_min, const ScreenRules& rules) {
  Screened s;
  screen_preflight(joined, nnodes_min, rules, s);
  if (s.error.empty() && rules.strikes.on()) screen_strikes(joined, nnodes_min, rules, s);
  return s;
}

}  // namespace ddp::launch::multinode
