#include "launcher/rendezvous/round_plan.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::rendezvous {
namespace {

using nlohmann::json;

std::string describe(const NodeInfo& n) { return fmt::format("{} (pid {})", n.host, n.pid); }

json info_json(const NodeInfo& n) {
  return {{"name", n.name},
          {"host", n.host},
          {"addr", n.addr},
          {"worker_port", n.worker_port},
          {"agent_store", n.agent_store},
          {"nproc", n.nproc},
          {"requested_rank", n.requested_rank},
          {"previous_rank", n.previous_rank},
          {"nnodes_min", n.nnodes_min},
          {"nnodes_max", n.nnodes_max},
          {"max_restarts", n.max_restarts},
          {"pid", n.pid},
          {"role", n.role},
          {"status_url", n.status_url},
          {"preflight_failed", n.preflight_failed},
          {"cpu_gflops", n.cpu_gflops},
          {"nccl_busbw_gbps", n.nccl_busbw_gbps},
          {"strikes", n.strike_ages_s},
          {"probe_port", n.probe_port},
          {"spare", n.spare}};
}

NodeInfo info_from(const json& j) {
  NodeInfo n;
  n.name = j.at("name").get<std::string>();
  n.host = j.at("host").get<std::string>();
  n.addr = j.at("addr").get<std::string>();
  n.worker_port = j.at("worker_port").get<int>();
  n.agent_store = j.value("agent_store", false);
  n.nproc = j.at("nproc").get<int>();
  n.requested_rank = j.at("requested_rank").get<int>();
  n.previous_rank = j.at("previous_rank").get<int>();
  n.nnodes_min = j.at("nnodes_min").get<int>();
  n.nnodes_max = j.at("nnodes_max").get<int>();
  n.max_restarts = j.at("max_restarts").get<int>();
  n.pid = j.at("pid").get<long>();
  n.role = j.value("role", std::string("default"));
  n.status_url = j.value("status_url", std::string());
  n.preflight_failed = j.value("preflight_failed", std::string());
  n.cpu_gflops = j.value("cpu_gflops", 0.0);
  n.nccl_busbw_gbps = j.value("nccl_busbw_gbps", 0.0);
  n.strike_ages_s = j.value("strikes", std::vector<double>{});
  n.probe_port = j.value("probe_port", 0);
  n.spare = j.value("spare", false);
  return n;
}

json parse(const std::string& text, const char* what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) malformed_record(what, "not a JSON object");
  return j;
}

}  // namespace

void malformed_record(const std::string& what, const std::string& detail) {
  throw LaunchError(exit_code::kRendezvousFailed,
                    fmt::format("malformed {} in the agent store ({}); do all nodes run the same "
                                "ddp-launch version?",
                                what, detail));
}

const PlannedNode* RoundPlan::find(const std::string& name) const {
  for (const auto& n : nodes)
    if (n.info.name == name) return &n;
  return nullptr;
}

namespace {

// "" when every node agrees on --nnodes and --max-restarts, else what to fix.
std::string disagreement(const std::vector<NodeInfo>& joined) {
  const NodeInfo& first = joined.front();
  for (const auto& n : joined) {
    if (n.nnodes_min != first.nnodes_min || n.nnodes_max != first.nnodes_max)
      return fmt::format(
          "nodes disagree on --nnodes: {} says {}:{}, {} says {}:{}; give every "
          "node the same value",
          describe(first), first.nnodes_min, first.nnodes_max, describe(n), n.nnodes_min, n.nnodes_max);
    if (n.max_restarts != first.max_restarts)
      return fmt::format(
          "nodes disagree on --max-restarts: {} says {}, {} says {}; give "
          "every node the same value",
          describe(first), first.max_restarts, describe(n), n.max_restarts);
  }
  return "";
}

// The node of each group rank: explicit --node-rank first, then a node's previous rank when
// free, then the rest in join order. Sets `error` (and returns {}) when ranks conflict.
std::vector<const NodeInfo*> assign_ranks(const std::vector<NodeInfo>& joined, std::string& error) {
  const int count = static_cast<int>(joined.size());
  std::vector<const NodeInfo*> by_rank(count, nullptr);
  std::vector<bool> placed(joined.size(), false);
  for (size_t i = 0; i < joined.size(); ++i) {
    int r = joined[i].requested_rank;
    if (r < 0) continue;
    if (r >= count) {
      error = fmt::format(
          "{} asks for --node-rank {}, but the round has {} node{} (ranks "
          "0..{}); is a node missing or --nnodes wrong?",
          describe(joined[i]), r, count, count == 1 ? "" : "s", count - 1);
      return {};
    }
    if (by_rank[r]) {
      error = fmt::format(
          "node rank {} is claimed twice: by {} and by {}; give each node its "
          "own --node-rank",
          r, describe(*by_rank[r]), describe(joined[i]));
      return {};
    }
    by_rank[r] = &joined[i];
    placed[i] = true;
  }
  for (size_t i = 0; i < joined.size(); ++i) {
    const int want = joined[i].previous_rank;
    if (placed[i] || want < 0 || want >= count || by_rank[want]) continue;
    by_rank[want] = &joined[i];
    placed[i] = true;
  }
  size_t free_rank = 0;  // ranks below it are taken: one pass for all, not a search per node
  for (size_t i = 0; i < joined.size(); ++i) {
    if (placed[i]) continue;
    while (by_rank[free_rank]) ++free_rank;
    by_rank[free_rank] = &joined[i];
  }
  return by_rank;
}

// ROLE_RANK bases and ROLE_WORLD_SIZE: each role's workers counted in group-rank order, as
// torchrun numbers them.
void assign_role_ranks(std::vector<PlannedNode>& nodes) {
  std::map<std::string, int> before, total;
  for (const auto& n : nodes) total[n.info.role] += n.info.nproc;
  for (auto& n : nodes) {
    n.role_base_rank = before[n.info.role];
    n.role_world_size = total[n.info.role];
    before[n.info.role] += n.info.nproc;
  }
}

}  // namespace

RoundPlan make_plan(const std::vector<NodeInfo>& joined, int round, int restart_count) {
  RoundPlan plan;
  plan.round = round;
  plan.restart_count = restart_count;
  plan.tickets = static_cast<int>(joined.size());
  if (joined.empty()) {
    plan.error = "no node joined the round";
    return plan;
  }
  plan.error = disagreement(joined);
  if (!plan.error.empty()) return plan;
  const std::vector<const NodeInfo*> by_rank = assign_ranks(joined, plan.error);
  if (!plan.error.empty()) return plan;
  int base = 0;
  for (int r = 0; r < static_cast<int>(by_rank.size()); ++r) {
    PlannedNode n{*by_rank[r], r, base};
    n.ticket = static_cast<int>(by_rank[r] - joined.data()) + 1;
    plan.nodes.push_back(std::move(n));
    base += by_rank[r]->nproc;
  }
  assign_role_ranks(plan.nodes);
  plan.nnodes = static_cast<int>(plan.nodes.size());
  plan.world_size = base;
  plan.master_addr = plan.nodes[0].info.addr;
  plan.master_port = plan.nodes[0].info.worker_port;
  plan.agent_store = plan.nodes[0].info.agent_store;
  return plan;
}

std::string to_json(const NodeInfo& info) { return info_json(info).dump(); }

namespace {

json seat_json(const PlannedNode& n) {
  return {{"group_rank", n.group_rank},
          {"base_rank", n.base_rank},
          {"role_base_rank", n.role_base_rank},
          {"role_world_size", n.role_world_size},
          {"ticket", n.ticket}};
}

PlannedNode seat_from(const json& j, NodeInfo info) {
  PlannedNode n;
  n.info = std::move(info);
  n.group_rank = j.at("group_rank").get<int>();
  n.base_rank = j.at("base_rank").get<int>();
  n.role_base_rank = j.at("role_base_rank").get<int>();
  n.role_world_size = j.at("role_world_size").get<int>();
  n.ticket = j.at("ticket").get<int>();
  return n;
}

}  // namespace

std::string summary_to_json(const RoundPlan& plan) {
  return json{{"round", plan.round},
              {"restart_count", plan.restart_count},
              {"nnodes", plan.nnodes},
              {"tickets", plan.tickets},
              {"world_size", plan.world_size},
              {"master_addr", plan.master_addr},
              {"master_port", plan.master_port},
              {"agent_store", plan.agent_store},
              {"error", plan.error},
              {"error_code", plan.error_code},
              {"left_out", plan.left_out}}
      .dump();
}

std::string seat_to_json(const PlannedNode& node) { return seat_json(node).dump(); }

std::string nodes_to_json(const RoundPlan& plan) {
  json nodes = json::array();
  for (const auto& n : plan.nodes) {
    json j = seat_json(n);
    j["info"] = info_json(n.info);
    nodes.push_back(std::move(j));
  }
  return nodes.dump();
}

NodeInfo node_info_from_json(const std::string& text) {
  try {
    return info_from(parse(text, "node record"));
  } catch (const json::exception& e) {  // a field missing or of the wrong type
    malformed_record("node record", e.what());
  }
}

RoundPlan plan_from_json(const std::string& summary) {
  try {
    json j = parse(summary, "plan record");
    RoundPlan plan;
    plan.round = j.at("round").get<int>();
    plan.restart_count = j.at("restart_count").get<int>();
    plan.nnodes = j.at("nnodes").get<int>();
    plan.tickets = j.at("tickets").get<int>();
    plan.world_size = j.at("world_size").get<int>();
    plan.master_addr = j.at("master_addr").get<std::string>();
    plan.master_port = j.at("master_port").get<int>();
    plan.agent_store = j.at("agent_store").get<bool>();
    plan.error = j.at("error").get<std::string>();
    plan.error_code = j.value("error_code", int{exit_code::kRendezvousFailed});
    plan.left_out = j.value("left_out", std::vector<std::string>{});
    return plan;
  } catch (const json::exception& e) {  // a field missing or of the wrong type
    malformed_record("plan record", e.what());
  }
}

std::string left_out_seat_json(const std::string& why, int exit_code) {
  return json{{"left_out", why}, {"code", exit_code}}.dump();
}

std::string spare_seat_json() { return json{{"spare", true}}.dump(); }

bool is_spare_seat(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  return j.is_object() && j.value("spare", false);
}

PlannedNode seat_from_json(const std::string& text, NodeInfo self) {
  json j = parse(text, "seat record");
  if (j.contains("left_out"))
    throw LaunchError(j.value("code", int{exit_code::kPreflightFailed}),
                      fmt::format("this node was left out of the job: {}", j.value("left_out", std::string())));
  try {
    return seat_from(j, std::move(self));
  } catch (const json::exception& e) {
    malformed_record("seat record", e.what());
  }
}

std::vector<PlannedNode> nodes_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) malformed_record("node list", "not a JSON array");
  try {
    std::vector<PlannedNode> nodes;
    nodes.reserve(j.size());
    for (const auto& n : j) nodes.push_back(seat_from(n, info_from(n.at("info"))));
    return nodes;
  } catch (const json::exception& e) {
    malformed_record("node list", e.what());
  }
}

}  // namespace ddp::launch::rendezvous
