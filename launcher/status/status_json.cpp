#include "launcher/status/status_json.hpp"

#include <nlohmann/json.hpp>

namespace ddp::launch::status {
namespace {

nlohmann::ordered_json goodput_json(const report::GoodputTotals& g) {
  nlohmann::ordered_json badput = nlohmann::ordered_json::object();
  for (report::Badput kind : report::kAllBadput) badput[to_string(kind)] = g.badput_s[static_cast<size_t>(kind)];
  return {{"ratio", g.ratio},         {"wall_s", g.wall_s}, {"goodput_s", g.goodput_s},
          {"pending_s", g.pending_s}, {"badput_s", badput}, {"ignored_records", g.ignored_records},
          {"coarse", g.coarse}};
}

// Group rank 0's list of every node's endpoint and what it joined with.
nlohmann::ordered_json nodes_json(const std::vector<report::StatusBoard::Node>& nodes) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const report::StatusBoard::Node& n : nodes)
    out.push_back({{"node_rank", n.node_rank},
                   {"host", n.host},
                   {"url", n.url},
                   {"preflight_failed", n.preflight_failed},
                   {"cpu_gflops", n.cpu_gflops},
                   {"strikes", n.strikes},
                   {"nccl_busbw_gbps", n.nccl_busbw_gbps}});
  return out;
}

}  // namespace

std::string status_json(const report::StatusBoard& b, double now,
                        const std::optional<std::vector<std::string>>& worker_args) {
  using nlohmann::ordered_json;
  ordered_json job = {{"program", b.job.program},     {"run_id", b.job.run_id},   {"role", b.job.role},
                      {"backend", b.job.backend},     {"version", b.job.version}, {"host", b.job.host},
                      {"node_rank", b.job.node_rank}, {"nnodes", b.job.nnodes},   {"max_restarts", b.job.max_restarts}};
  if (worker_args) job["args"] = *worker_args;
  ordered_json j;
  j["job"] = job;
  j["now"] = now;
  j["uptime_s"] = now - b.started_unix_s;
  j["attempt"] = b.attempt;
  j["round"] = b.round ? ordered_json(*b.round) : ordered_json(nullptr);
  j["world_size"] = b.world_size;
  j["finished"] = b.finished ? ordered_json(*b.finished) : ordered_json(nullptr);
  ordered_json ranks = ordered_json::array();
  for (const report::RankStatus& r : b.ranks) {
    ordered_json history = ordered_json::array();
    for (const auto& [t, s] : r.step_history) history.push_back({t, s});
    ranks.push_back({{"rank", r.rank},
                     {"local_rank", r.local_rank},
                     {"state", to_string(r.state)},
                     {"fed", r.fed},
                     {"step", r.step},
                     {"step_s", r.step_s ? ordered_json(*r.step_s) : ordered_json(nullptr)},
                     {"since_progress_s", r.since_progress_s},
                     {"collective_seq", r.collective_seq},
                     {"straggler", r.straggler},
                     {"step_history", history}});
  }
  j["ranks"] = ranks;
  ordered_json restarts = ordered_json::object();
  for (FailureKind k : kAllFailureKinds) {
    auto it = b.restarts.find(k);
    restarts[std::string(to_string(k))] = it == b.restarts.end() ? 0ULL : it->second;
  }
  j["restarts"] = restarts;
  j["hang_verdicts"] = b.hang_verdicts;
  j["goodput"] = goodput_json(b.goodput.totals(now));
  j["preflight"] = b.preflight;  // {} without --preflight
  j["strikes"] = b.strikes;
  j["spare"] = b.spare;
  j["left_out"] = b.left_out;
  ordered_json events = ordered_json::array();
  for (const std::string& line : b.recent_events()) {
    auto e = ordered_json::parse(line, nullptr, false);
    if (!e.is_discarded()) events.push_back(std::move(e));
  }
  j["events"] = events;
  j["nodes"] = nodes_json(b.nodes);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ddp::launch::status
