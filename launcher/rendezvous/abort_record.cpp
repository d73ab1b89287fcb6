#include "launcher/rendezvous/abort_record.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/rendezvous/round_plan.hpp"

namespace ddp::launch::rendezvous {
namespace {

using nlohmann::json;

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
  if (!r.verdict.empty()) return FailureKind::kHang;
  if (r.rank < 0) return FailureKind::kStopped;
  return r.exit_code > 128 ? FailureKind::kSignal : FailureKind::kCrash;
}

}  // namespace

AbortRecord AbortRecord::worker_failure(const report::WorkerOutcome& root, int node_rank, const std::string& host,
                                        bool final) {
  AbortRecord r;
  r.failure = root.failure;
  r.reason = is_hang(root.failure)       ? fmt::format("node {} ({}) detected a {}", node_rank, host, root.verdict)
             : has_verdict(root.failure) ? fmt::format("node {} ({}): {}", node_rank, host, root.verdict)
                                         : fmt::format("rank {} on node {} ({}) failed with {}", root.rank, node_rank,
                                                       host, root.status.describe());
  r.node_rank = node_rank;
  r.host = host;
  r.rank = root.rank;
  r.local_rank = root.local_rank;
  r.pid = root.pid;
  r.exit_code = report::failure_exit_code(root);
  r.status = report::stopped_by_verdict(root);
  if (r.status.empty()) r.status = root.status.describe();
  if (has_verdict(root.failure)) r.verdict = root.verdict;
  if (is_hang(root.failure)) r.stacks_file = root.stacks_file;
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
                               error,     traceback, failure, verdict,    stacks_file};
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
              {"hang", r.verdict},
              {"stacks_file", r.stacks_file},
              {"stop_note", r.stop_note},
              {"final", r.final}}
      .dump();
}

AbortRecord abort_from_json(const std::string& text) {
  try {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) malformed_record("abort record", "not a JSON object");
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
    r.verdict = j.value("hang", std::string());  // older launchers write none
    r.stacks_file = j.value("stacks_file", std::string());
    r.stop_note = j.value("stop_note", std::string());
    r.final = j.at("final").get<bool>();
    r.failure = failure_of(j, r);
    return r;
  } catch (const json::exception& e) {  // a field missing or of the wrong type
    malformed_record("abort record", e.what());
  }
}

}  // namespace ddp::launch::rendezvous
