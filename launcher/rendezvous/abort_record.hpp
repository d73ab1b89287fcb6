// The abort record: why a round ended early, written once per round (compare-and-set: the
// first one wins) and read by every node to stop, restart or report together. Named
// factories for each cause, and its JSON (older launchers' records included). Pure: no I/O;
// a record that cannot be read throws LaunchError(kRendezvousFailed) (malformed_record).
#pragma once

#include <optional>
#include <string>

#include "launcher/base/failure_kind.hpp"
#include "launcher/report/failure_report.hpp"

namespace ddp::launch::rendezvous {

// Why a round ended early. Written once per round (compare-and-set: the first one wins).
struct AbortRecord {
  // A worker of node `node_rank` failed, or hung (is_hang(root.failure): the verdict, 119);
  // final: no restart left.
  static AbortRecord worker_failure(const report::WorkerOutcome& root, int node_rank, const std::string& host,
                                    bool final);
  // The store lost node `node_rank` (`why`: the store's reason) while it had not finished.
  static AbortRecord lost_node(int node_rank, const std::string& host, const std::string& why, bool final);
  // A new node waits to join: every node restarts in a new round (not counted as a restart).
  static AbortRecord membership_change(int node_rank, const std::string& host);
  // Node `node_rank` got a stop signal: every node exits with 128+signal.
  // why: what the stop's asker said (a stop request's reason, supervise/stop_requests), told instead of the signal's
  // name.
  static AbortRecord stopped_by_signal(int node_rank, const std::string& host, int signal,
                                       const std::optional<std::string>& why = std::nullopt);

  // The root cause as the other nodes report it.
  report::RemoteFailure remote_failure() const;

  // crash, signal, hang, desync (a worker's), node_lost, stopped or membership. On the wire
  // as "failure" (its name) and, for older launchers, "kind" (0 a worker or a stop signal,
  // 1 a lost node, 2 membership); a record without "failure" gets it from those.
  FailureKind failure = FailureKind::kCrash;
  std::string reason;  // one line for humans
  int node_rank = -1;  // the node where it happened
  std::string host;
  int rank = -1;  // the failed worker (crash, signal, hang, desync)
  int local_rank = -1;
  long pid = 0;
  int exit_code = 1;   // what every launcher exits with if this is final
  std::string status;  // "exit code 3" / "signal 9 (SIGKILL)"
  std::string error;   // the worker's error-file message, if any
  std::string traceback;
  std::string verdict;      // the launcher's verdict line ("": none); JSON "hang", absent in older records
  std::string stacks_file;  // the culprit's stacks file on node `host` (a hang); likewise
  // A stop the stop's asker explained (a many-host launch's launching machine, which stops
  // every host for it): what it said. Every node then reports it as its own stop.
  std::string stop_note;
  bool final = false;  // no restarts left: everyone exits with exit_code
};

std::string to_json(const AbortRecord& record);
AbortRecord abort_from_json(const std::string& text);

}  // namespace ddp::launch::rendezvous
