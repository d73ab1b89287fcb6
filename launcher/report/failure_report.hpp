// The failure report: reading workers' error files (PyTorch's @record JSON, both the
// nested and the flat form) and formatting the summary that names the root cause first,
// then every other worker; on the other nodes of a multi-node job, the remote report.
// Pure except read_error_file (reads one small file).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/base/failure_kind.hpp"
#include "launcher/os/process.hpp"

namespace ddp::launch::report {

struct ErrorRecord {
  std::string message;    // e.g. "RuntimeError: boom"
  std::string traceback;  // extraInfo.py_callstack, may be empty
  std::optional<long long> timestamp;
};

// nullopt when the text is not an error record (malformed, foreign JSON).
std::optional<ErrorRecord> parse_error_record(std::string_view json_text);
std::optional<ErrorRecord> read_error_file(const std::string& path);

struct WorkerOutcome {
  int rank = 0;
  int local_rank = 0;
  long pid = 0;
  os::ExitStatus status;
  std::chrono::system_clock::time_point time;
  std::string error_file;                // "" if none was assigned
  std::optional<ErrorRecord> error;      // what the worker wrote there
  std::vector<std::string> stderr_tail;  // its last stderr lines
  bool stopped_by_launcher = false;      // we sent it SIGTERM/SIGKILL after another failed
  // How it failed, when it failed by itself: kCrash or kSignal from its exit status (set
  // when it is reaped); kHang or kDesync when it is the culprit of a hang verdict.
  FailureKind failure = FailureKind::kCrash;
  std::string verdict;      // the launcher's verdict (has_verdict(failure)): a hang's, an expired timer's, ...
  std::string stacks_file;  // a hang's post-mortem of this worker ("": none)
  bool unreaped = false;    // still running after SIGKILL (uninterruptible sleep): status is unknown
};

struct ReportContext {
  std::string program;
  std::string host;
  int restart_count = 0;
  int max_restarts = 0;
};

std::string format_failure_report(const ReportContext& ctx, const WorkerOutcome& root,
                                  const std::vector<WorkerOutcome>& others);
// The same for one attempt's outcomes: outcomes[root_cause] first, then all the others.
std::string format_failure_report(const ReportContext& ctx, const std::vector<WorkerOutcome>& outcomes,
                                  size_t root_cause);

// The root cause as another node reported it (multi-node).
struct RemoteFailure {
  int node_rank = -1;
  std::string host;
  int rank = -1;  // the failed worker, or -1 (a lost node, a stop signal)
  int local_rank = -1;
  long pid = 0;
  std::string exit;  // "exit code 3", or why the round ended
  std::string error;
  std::string traceback;
  FailureKind kind = FailureKind::kCrash;
  std::string verdict;      // the launcher's verdict line (has_verdict(kind)), or ""
  std::string stacks_file;  // a hang's stacks file on node `host`, or ""
};

// The report on a node whose own workers did not cause the failure (they were stopped).
std::string format_remote_failure_report(const std::string& program, const RemoteFailure& root, int my_node,
                                         const std::string& my_host);

// Whether the worker's error (its error file, else its last stderr lines) reads like a
// communication failure (a peer vanished, a connection closed or reset, a collective's
// transport error): then it is likely the symptom of a failure elsewhere, which the
// multi-node agent gives a short time to be recorded first (docs/multinode.md "Which event
// is the root cause").
bool looks_like_comm_error(const WorkerOutcome& outcome);

// How the launcher itself ended the root cause's worker, when a verdict did (a hang, the D
// state: "stopped by ddp-launch: a hang (exit code 119)"); "" otherwise.
std::string stopped_by_verdict(const WorkerOutcome& root);
// The launcher's exit code for this root cause: 119 for a hang or the D state, else its exit status's.
int failure_exit_code(const WorkerOutcome& root);

// A hint for well-known signals ("likely the out-of-memory killer"), or "".
std::string signal_hint(const os::ExitStatus& status, bool stopped_by_launcher);

// The launcher's own error record for a scheduler (written to the launcher's
// TORCHELASTIC_ERROR_FILE if set): the root cause's record plus "errorCode".
std::string launcher_error_record(const WorkerOutcome& root, const ReportContext& ctx);
// The same where another node's root cause ended the job with `exit_code`.
std::string launcher_error_record(const RemoteFailure& root, int exit_code);

}  // namespace ddp::launch::report
