#include "launcher/multinode/round_plan.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"

namespace ddp::launch::multinode {
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
          {"status_url", n.status_url}};
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
  return n;
}

json parse(const std::string& text, const char* what) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) malformed_record(what, "not a JSON object");
  return j;
}

// The "kind" older launchers read: 0 a worker's failure or a stop signal, 1 a lost node,
// 2 a membership change.
int legacy_kind(FailureKind failure) {
  if (failure == FailureKind::kNodeLost) return 1;
  if (failure == FailureKind::kMembership) return 2;
  return 0;
}

// The failure of a record: its "failure" name, or for a record from an older launcher
// (none written) what its "kind" and fields imply; those did not tell a desync from a hang.
FailureKind failure_of(const json& j, const AbortRecord& r) {
  const int kind = j.at("kind").get<int>();
  if (kind < 0 || kind > 2) malformed_record("abort record", fmt::format("unknown kind {}", kind));
  if (j.contains("failure")) {
    const std::string name = j.at("failure").get<std::string>();
    if (auto failure = failure_kind_from_string(name)) return *failure;
    malformed_record("abort record", fmt::format("unknown failure '{}'", name));
  }
  if (kind == 1) return FailureKind::kNodeLost;
  if (kind == 2) return FailureKind::kMembership;
  if (!r.hang.empty()) return FailureKind::kHang;
  if (r.rank < 0) return FailureKind::kStopped;
  return r.exit_code > 128 ? FailureKind::kSignal : FailureKind::kCrash;
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
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < joined.size(); ++i) {
      if (placed[i]) continue;
      int want = joined[i].previous_rank;
      if (pass == 0) {
        if (want < 0 || want >= count || by_rank[want]) continue;
      } else {
        want = static_cast<int>(std::find(by_rank.begin(), by_rank.end(), nullptr) - by_rank.begin());
      }
      by_rank[want] = &joined[i];
      placed[i] = true;
    }
  }
  return by_rank;
}

}  // namespace

RoundPlan make_plan(const std::vector<NodeInfo>& joined, int round, int restart_count) {
  RoundPlan plan;
  plan.round = round;
  plan.restart_count = restart_count;
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
    plan.nodes.push_back(PlannedNode{*by_rank[r], r, base});
    base += by_rank[r]->nproc;
  }
  plan.world_size = base;
  plan.master_addr = plan.nodes[0].info.addr;
  plan.master_port = plan.nodes[0].info.worker_port;
  return plan;
}

std::pair<int, int> role_ranks(const RoundPlan& plan, int group_rank) {
  const std::string& role = plan.nodes.at(static_cast<size_t>(group_rank)).info.role;
  int base = 0, size = 0;
  for (const auto& n : plan.nodes) {
    if (n.info.role != role) continue;
    if (n.group_rank < group_rank) base += n.info.nproc;
    size += n.info.nproc;
  }
  return {base, size};
}

AbortRecord AbortRecord::worker_failure(const report::WorkerOutcome& root, int node_rank, const std::string& host,
                                        bool final) {
  AbortRecord r;
  r.failure = root.failure;
  r.reason = is_hang(root.failure) ? fmt::format("node {} ({}) detected a {}", node_rank, host, root.hang)
                                   : fmt::format("rank {} on node {} ({}) failed with {}", root.rank, node_rank, host,
                                                 root.status.describe());
  r.node_rank = node_rank;
  r.host = host;
  r.rank = root.rank;
  r.local_rank = root.local_rank;
  r.pid = root.pid;
  r.exit_code = report::failure_exit_code(root);
  r.status = is_hang(root.failure) ? fmt::format("stopped by ddp-launch: a hang (exit code {})", r.exit_code)
                                   : root.status.describe();
  if (is_hang(root.failure)) {
    r.hang = root.hang;
    r.stacks_file = root.stacks_file;
  }
  if (root.error) {
    r.error = root.error->message;
    r.traceback = root.error->traceback;
  }
  r.final = final;
  return r;
}

AbortRecord AbortRecord::lost_node(int node_rank, const std::string& host, const std::string& why, bool final) {
  AbortRecord r;
  r.failure = FailureKind::kNodeLost;
  r.reason = fmt::format("node {} ({}) was lost: {}", node_rank, host, why);
  r.node_rank = node_rank;
  r.host = host;
  r.exit_code = exit_code::kRendezvousFailed;
  r.final = final;
  return r;
}

AbortRecord AbortRecord::membership_change(int node_rank, const std::string& host) {
  AbortRecord r;
  r.failure = FailureKind::kMembership;
  r.reason = "a new node is waiting to join; all nodes restart in a new round";
  r.node_rank = node_rank;
  r.host = host;
  return r;
}

AbortRecord AbortRecord::stopped_by_signal(int node_rank, const std::string& host, int signal,
                                           const std::optional<std::string>& why) {
  AbortRecord r;
  r.failure = FailureKind::kStopped;
  r.reason = why ? fmt::format("node {} ({}) was stopped: {}", node_rank, host, *why)
                 : fmt::format("node {} ({}) was stopped by {}", node_rank, host, signal_name(signal));
  r.node_rank = node_rank;
  r.host = host;
  r.exit_code = exit_code::from_signal(signal);
  r.status = r.reason;
  r.stop_note = why.value_or("");
  r.final = true;
  return r;
}

report::RemoteFailure AbortRecord::remote_failure() const {
  return report::RemoteFailure{node_rank, host,      rank,    local_rank, pid,        status.empty() ? reason : status,
                               error,     traceback, failure, hang,       stacks_file};
}

std::string to_json(const NodeInfo& info) { return info_json(info).dump(); }

std::string to_json(const RoundPlan& plan) {
  json nodes = json::array();
  for (const auto& n : plan.nodes)
    nodes.push_back({{"info", info_json(n.info)}, {"group_rank", n.group_rank}, {"base_rank", n.base_rank}});
  return json{{"round", plan.round},
              {"restart_count", plan.restart_count},
              {"nodes", nodes},
              {"world_size", plan.world_size},
              {"master_addr", plan.master_addr},
              {"master_port", plan.master_port},
              {"error", plan.error}}
      .dump();
}

std::string to_json(const AbortRecord& r) {
  return json{{"failure", std::string(to_string(r.failure))},
              {"kind", legacy_kind(r.failure)},
              {"reason", r.reason},
              {"node_rank", r.node_rank},
              {"host", r.host},
              {"rank", r.rank},
              {"local_rank", r.local_rank},
              {"pid", r.pid},
              {"exit_code", r.exit_code},
              {"status", r.status},
              {"error", r.error},
              {"traceback", r.traceback},
              {"hang", r.hang},
              {"stacks_file", r.stacks_file},
              {"stop_note", r.stop_note},
              {"final", r.final}}
      .dump();
}

NodeInfo node_info_from_json(const std::string& text) {
  try {
    return info_from(parse(text, "node record"));
  } catch (const json::exception& e) {  // a field missing or of the wrong type
    malformed_record("node record", e.what());
  }
}

RoundPlan plan_from_json(const std::string& text) {
  try {
    json j = parse(text, "plan record");
    RoundPlan plan;
    plan.round = j.at("round").get<int>();
    plan.restart_count = j.at("restart_count").get<int>();
    for (const auto& n : j.at("nodes"))
      plan.nodes.push_back(
          PlannedNode{info_from(n.at("info")), n.at("group_rank").get<int>(), n.at("base_rank").get<int>()});
    plan.world_size = j.at("world_size").get<int>();
    plan.master_addr = j.at("master_addr").get<std::string>();
    plan.master_port = j.at("master_port").get<int>();
    plan.error = j.at("error").get<std::string>();
    return plan;
  } catch (const json::exception& e) {  // a field missing or of the wrong type
    malformed_record("plan record", e.what());
  }
}

AbortRecord abort_from_json(const std::string& text) {
  try {
    json j = parse(text, "abort record");
    AbortRecord r;
    r.reason = j.at("reason").get<std::string>();
    r.node_rank = j.at("node_rank").get<int>();
    r.host = j.at("host").get<std::string>();
    r.rank = j.at("rank").get<int>();
    r.local_rank = j.at("local_rank").get<int>();
    r.pid = j.at("pid").get<long>();
    r.exit_code = j.at("exit_code").get<int>();
    r.status = j.at("status").get<std::string>();
    r.error = j.at("error").get<std::string>();
    r.traceback = j.at("traceback").get<std::string>();
    r.hang = j.value("hang", std::string());  // older launchers write none
    r.stacks_file = j.value("stacks_file", std::string());
    r.stop_note = j.value("stop_note", std::string());
    r.final = j.at("final").get<bool>();
    r.failure = failure_of(j, r);
    return r;
  } catch (const json::exception& e) {  // a field missing or of the wrong type
    malformed_record("abort record", e.what());
  }
}

}  // namespace ddp::launch::multinode
