#include "launcher/rendezvous/link_round.hpp"

#include <nlohmann/json.hpp>

#include "launcher/rendezvous/node_screen.hpp"  // node_label

namespace ddp::launch::rendezvous {

using nlohmann::json;

std::string to_json(const LinkPeer& p) {
  return json{{"addr", p.addr},
              {"port", p.port},
              {"clock_addr", p.clock_addr},
              {"clock_port", p.clock_port},
              {"ms", p.ms},
              {"store_addr", p.store_addr},
              {"store_port", p.store_port}}
      .dump();
}

LinkPeer link_peer_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    LinkPeer p;
    p.addr = j.at("addr").get<std::string>();
    p.port = j.at("port").get<int>();
    p.clock_addr = j.at("clock_addr").get<std::string>();
    p.clock_port = j.at("clock_port").get<int>();
    p.ms = j.at("ms").get<double>();
    p.store_addr = j.value("store_addr", std::string());
    p.store_port = j.value("store_port", 0);
    return p;
  } catch (const json::exception& e) {
    malformed_record("link peer record", e.what());
  }
}

std::string to_json(const preflight::RingReport& r) {
  return json{{"out_mbps", r.link.out_mbps},  {"in_mbps", r.link.in_mbps},          {"rtt_us", r.link.rtt_us},
              {"link_error", r.link.error},   {"clock_offset_s", r.clock.offset_s}, {"clock_rtt_ms", r.clock.rtt_ms},
              {"clock_error", r.clock.error}, {"store_error", r.store_error}}
      .dump();
}

preflight::RingReport ring_report_from_json(const std::string& text) {
  try {
    const json j = json::parse(text);
    preflight::RingReport r;
    r.link = {j.at("out_mbps").get<double>(), j.at("in_mbps").get<double>(), j.at("rtt_us").get<double>(),
              j.at("link_error").get<std::string>()};
    r.clock = {j.at("clock_offset_s").get<double>(), j.at("clock_rtt_ms").get<double>(),
               j.at("clock_error").get<std::string>()};
    r.store_error = j.value("store_error", std::string());
    return r;
  } catch (const json::exception& e) {
    malformed_record("link report record", e.what());
  }
}

namespace {

constexpr const char* kNoReport = "it did not report its link check in time";

// One measurement of the ring: every node's ask published (the leader's own measured here), then
// the reports read; a node that did not report by `deadline` counts as a failed link (one that
// did not report the first time is not waited for again).
std::vector<preflight::RingReport> measure_ring(store::Store& job, int round, int pass, const std::vector<size_t>& ring,
                                                const std::vector<LinkPeer>& asks, const MeasureLinks& measure,
                                                std::chrono::steady_clock::time_point deadline,
                                                const std::vector<preflight::RingReport>& before) {
  std::vector<std::pair<std::string, std::string>> peers;
  for (size_t k = 1; k < ring.size(); ++k)
    peers.emplace_back(LinkKeys::peer(round, static_cast<long>(ring[k]) + 1, pass), to_json(asks[k]));
  if (!peers.empty()) job.multi_set(peers);
  job.set(LinkKeys::report(round, 1, pass), to_json(measure(asks[0])));
  std::vector<preflight::RingReport> reports;
  for (size_t i : ring) {
    const std::string key = LinkKeys::report(round, static_cast<long>(i) + 1, pass);
    const auto left = std::chrono::duration_cast<store::Duration>(deadline - std::chrono::steady_clock::now());
    const bool silent_before = !before.empty() && before[reports.size()].link.error == kNoReport;
    if (left.count() > 0 && !silent_before) job.wait({key}, left);
    preflight::RingReport r;
    if (std::optional<std::string> text = job.try_get(key)) r = ring_report_from_json(*text);
    else r.link.error = r.clock.error = kNoReport;
    reports.push_back(std::move(r));
  }
  return reports;
}

}  // namespace

std::vector<std::string> check_links(store::Store& job, int round, std::vector<NodeInfo>& joined,
                                     const MeasureLinks& measure, const cli::PreflightConf& conf,
                                     std::chrono::steady_clock::time_point deadline) {
  std::vector<size_t> ring;  // indices into joined (ticket - 1) of the nodes that probe
  for (size_t i = 0; i < joined.size(); ++i)
    if (joined[i].probe_port > 0) ring.push_back(i);
  if (ring.size() < 2 || ring.front() != 0) return {};  // the leader probes, or nobody is asked
  const NodeInfo& host = joined[0];
  // The workers' store: on the node that will be group rank 0 (an explicit --node-rank 0, else
  // the first to join), checked where its launcher serves it (--worker-store=launcher).
  size_t zero = 0;
  for (size_t i = 0; i < joined.size(); ++i)
    if (joined[i].requested_rank == 0) zero = i;
  const NodeInfo& store = joined[zero];
  long store_pos = -1;
  for (size_t k = 0; k < ring.size() && store.agent_store; ++k)
    if (ring[k] == zero) store_pos = static_cast<long>(k);
  std::vector<LinkPeer> asks;  // ring position k's: toward its successor
  for (size_t k = 0; k < ring.size(); ++k) {
    const NodeInfo& next = joined[ring[(k + 1) % ring.size()]];
    LinkPeer p;
    p.addr = next.addr, p.port = next.probe_port, p.ms = conf.net_ms;
    p.clock_addr = host.addr, p.clock_port = host.probe_port;
    if (store_pos >= 0 && static_cast<long>(k) != store_pos)
      p.store_addr = store.addr, p.store_port = store.worker_port;
    asks.push_back(p);
  }
  std::vector<std::string> labels;
  for (size_t i : ring) labels.push_back(node_label(joined[i]) + " at " + joined[i].addr);
  const auto budget = deadline - std::chrono::steady_clock::now();
  std::vector<preflight::RingReport> best;
  preflight::LinkVerdict v;
  for (int pass = 1; pass <= kLinkPasses; ++pass) {
    const auto until = pass == 1 ? deadline : std::chrono::steady_clock::now() + budget;
    std::vector<preflight::RingReport> reports = measure_ring(job, round, pass, ring, asks, measure, until, best);
    if (pass == 1) best = std::move(reports);
    else
      for (size_t k = 0; k < best.size(); ++k) best[k] = preflight::better_of(best[k], reports[k]);
    v = preflight::judge_links(best, labels, conf, store_pos);
    if (v.failed.empty()) break;
  }
  for (const auto& [k, why] : v.failed) {
    std::string& failed = joined[ring[k]].preflight_failed;
    failed += (failed.empty() ? "" : "; ") + why;
  }
  return v.warnings;
}

}  // namespace ddp::launch::rendezvous
