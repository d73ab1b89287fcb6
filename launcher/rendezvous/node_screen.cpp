#include "launcher/rendezvous/node_screen.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/preflight/verdict.hpp"

namespace ddp::launch::rendezvous {
namespace {

// A figure the leader compares across the nodes that measured it (> 0), with their median.
struct Compared {
  double NodeInfo::*figure;
  double warn, fail;
  const char* text;  // "cpu: its median core {:.2f} GFLOP/s, {:.2f} of the nodes' median {:.2f}"
  size_t measured = 0;
  double nodes_median = 0;

  Compared(const std::vector<NodeInfo>& joined, double NodeInfo::*f, double w, double fl, const char* t)
      : figure(f), warn(w), fail(fl), text(t) {
    std::vector<double> values;
    for (const auto& n : joined)
      if (n.*figure > 0) values.push_back(n.*figure);
    measured = values.size();
    nodes_median = preflight::median(std::move(values));
  }

  // "" or the comparison's line for node n, and whether it is below `fail` (else below `warn`).
  std::pair<std::string, bool> judge(const NodeInfo& n) const {
    if (measured < 2 || n.*figure <= 0 || nodes_median <= 0) return {"", false};
    const double ratio = n.*figure / nodes_median;
    const std::string what = fmt::format(fmt::runtime(text), n.*figure, ratio, nodes_median);
    if (ratio < fail) return {fmt::format("{} (fail below {:g})", what, fail), true};
    if (ratio < warn) return {fmt::format("{} (warn below {:g})", what, warn), false};
    return {"", false};
  }
};

// Pre-flight: failed checks, and slow CPUs and NCCL bus bandwidths against the nodes' median.
void screen_preflight(const std::vector<NodeInfo>& joined, int nnodes_min, const ScreenRules& rules, Screened& s) {
  const Compared compared[] = {
      {joined, &NodeInfo::cpu_gflops, rules.cpu_warn, rules.cpu_fail,
       "cpu: its median core {:.2f} GFLOP/s, {:.2f} of the nodes' median {:.2f}"},
      {joined, &NodeInfo::nccl_busbw_gbps, rules.nccl_warn, rules.nccl_fail,
       "nccl: its GPUs' all-reduce bus bandwidth {:.1f} GB/s, {:.2f} of the nodes' median {:.1f}"}};
  for (size_t i = 0; i < joined.size(); ++i) {
    const NodeInfo& n = joined[i];
    std::string why, warning;
    if (!n.preflight_failed.empty())
      why = fmt::format("{}: its pre-flight check failed: {}", node_label(n), n.preflight_failed);
    for (const Compared& c : compared) {
      const auto [line, failed] = c.judge(n);
      if (line.empty()) continue;
      if (failed && why.empty()) why = fmt::format("{}: {}", node_label(n), line);
      else if (!failed && warning.empty()) warning = fmt::format("preflight: warn {}: {}", node_label(n), line);
    }
    if (!why.empty() && static_cast<long>(i) == rules.store_host && !n.preflight_failed.empty()) {
      s.error = fmt::format(
          "pre-flight: the node that hosts the job's store failed, so the job cannot run without "
          "it; no worker started: {}",
          why);
      return;
    }
    if (why.empty() || static_cast<long>(i) == rules.store_host) {  // the store's host: a slow one warns
      s.kept.push_back(i);
      if (!why.empty()) s.warnings.push_back("preflight: warn " + why + "; kept: it hosts the job's store");
      else if (!warning.empty()) s.warnings.push_back(warning);
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

}  // namespace ddp::launch::rendezvous
