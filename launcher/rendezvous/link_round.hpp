// The pre-flight link checks in a rendezvous round (docs/preflight.md "Links"). The leader of
// a job's first round puts the joiners that probe (NodeInfo::probe_port) in a ring in join order
// and gives each its successor's probe and the store host's (the leader's) probe, one record per
// joiner (rN/linkpeer/T); each measures and reports (rN/link/T); the leader judges the ring
// (preflight::judge_links). When that fails a node, every node measures once more (rN/linkpeer2/T,
// rN/link2/T) and the ring is judged on the better of each link's two measurements: a node is
// left out only when both show it failing (a CPU-starved moment reads as a slow link). The
// failing nodes are marked as failed pre-flight, which the round's screen then leaves out.
// Records are JSON; `measure` does the I/O (the agent's probe).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "launcher/cli/preflight_conf.hpp"
#include "launcher/rendezvous/round_plan.hpp"
#include "launcher/preflight/link_verdict.hpp"
#include "launcher/store/store.hpp"

namespace ddp::launch::rendezvous {

struct LinkPeer {
  std::string addr;  // the successor's probe
  int port = 0;
  std::string clock_addr;  // the store host's probe
  int clock_port = 0;
  double ms = 100;         // each direction's send
  std::string store_addr;  // the workers' store of the round to come (its would-be group rank 0's)
  int store_port = 0;      // 0: not asked (that node's launcher does not serve it)
};

std::string to_json(const LinkPeer& p);
LinkPeer link_peer_from_json(const std::string& text);
std::string to_json(const preflight::RingReport& r);
preflight::RingReport ring_report_from_json(const std::string& text);

// Measures a LinkPeer: what a node's probe does (the agent's).
using MeasureLinks = std::function<preflight::RingReport(const LinkPeer&)>;

// How many times the ring may be measured: a second time only when the first fails a node.
inline constexpr int kLinkPasses = 2;

struct LinkKeys {
  static std::string peer(int r, long t, int pass = 1) { return key(r, "linkpeer", pass, t); }
  static std::string report(int r, long t, int pass = 1) { return key(r, "link", pass, t); }

 private:
  static std::string key(int r, const char* what, int pass, long t) {
    return "r" + std::to_string(r) + "/" + what + (pass > 1 ? std::to_string(pass) : "") + "/" + std::to_string(t);
  }
};

// The leader (ticket 1, joined[0]): runs the checks of round `round` over `joined` (in ticket
// order) and appends each failing node's reason to its preflight_failed; returns the warning
// lines. Waits for each pass's reports until `deadline` (the second pass: as long again; a
// node that did not report counts as a failed link). Nothing when fewer than two nodes probe.
std::vector<std::string> check_links(store::Store& job, int round, std::vector<NodeInfo>& joined,
                                     const MeasureLinks& measure, const cli::PreflightConf& conf,
                                     std::chrono::steady_clock::time_point deadline);

}  // namespace ddp::launch::rendezvous
