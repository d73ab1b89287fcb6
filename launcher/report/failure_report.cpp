#include "launcher/report/failure_report.hpp"

#include <algorithm>
#include <csignal>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "launcher/base/exit_status.hpp"

namespace ddp::launch::report {
namespace {

using nlohmann::json;

std::optional<long long> as_timestamp(const json& value) {
  if (value.is_number_integer()) return value.get<long long>();
  if (value.is_string()) {
    try {
      return std::stoll(value.get<std::string>());
    } catch (const std::exception&) {  // a worker's odd timestamp: the report just omits it
    }
  }
  return std::nullopt;
}

std::string format_time(std::chrono::system_clock::time_point t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string indent(const std::string& text, const std::string& pad) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += pad + line + "\n";
  return out;
}

std::string describe_exit(const WorkerOutcome& w) {
  if (w.unreaped) return "still running after SIGKILL (asleep in the kernel): not waited for";
  if (w.failure == FailureKind::kWatchdog) return w.status.describe() + " - sent by ddp-launch: its file timer expired";
  std::string hint = signal_hint(w.status, w.stopped_by_launcher);
  return w.status.describe() + (hint.empty() ? "" : " - " + hint);
}

// The first lines of a hang's stacks file worth reading: the Python traceback if the
// worker's faulthandler appended one, else the native stacks.
std::string top_frames(const std::string& path, size_t max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  auto from = std::find_if(lines.begin(), lines.end(),
                           [](const std::string& l) { return l.find("most recent call first") != std::string::npos; });
  if (from == lines.end()) from = lines.begin();
  std::string out;
  for (size_t n = 0; from != lines.end() && n < max_lines; ++from, ++n) out += "    " + *from + "\n";
  return out;
}

std::string format_hang(const WorkerOutcome& root) {
  std::string out = fmt::format("  hang      : {}\n", root.verdict);
  if (root.stacks_file.empty()) return out + "  stacks    : <none: no run directory>\n";
  out += fmt::format("  stacks    : {} (every thread; the others' next to it)\n", root.stacks_file);
  std::string frames = top_frames(root.stacks_file, 14);
  return out + (frames.empty() ? "    <empty: see the notes in the file>\n" : "  top frames:\n" + frames);
}

}  // namespace

std::string stopped_by_verdict(const WorkerOutcome& root) {
  if (is_hang(root.failure)) return "stopped by ddp-launch: a hang (exit code 119)";
  if (root.failure == FailureKind::kUninterruptible)
    return "stopped by ddp-launch: asleep in the kernel (exit code 119)";
  return "";
}

int failure_exit_code(const WorkerOutcome& root) {
  return is_hang(root.failure) || root.failure == FailureKind::kUninterruptible ? exit_code::kHang
                                                                                : root.status.launcher_exit_code();
}

std::optional<ErrorRecord> parse_error_record(std::string_view json_text) {
  json doc = json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object() || !doc.contains("message")) return std::nullopt;
  const json& message = doc["message"];
  ErrorRecord record;
  if (message.is_string()) {  // flat form: {"message": "...", "timestamp": N}
    record.message = message.get<std::string>();
    if (doc.contains("timestamp")) record.timestamp = as_timestamp(doc["timestamp"]);
    return record;
  }
  if (!message.is_object() || !message.contains("message") || !message["message"].is_string()) return std::nullopt;
  record.message = message["message"].get<std::string>();
  if (message.contains("extraInfo") && message["extraInfo"].is_object()) {
    const json& extra = message["extraInfo"];
    if (extra.contains("py_callstack") && extra["py_callstack"].is_string())
      record.traceback = extra["py_callstack"].get<std::string>();
    if (extra.contains("timestamp")) record.timestamp = as_timestamp(extra["timestamp"]);
  }
  return record;
}

std::optional<ErrorRecord> read_error_file(const std::string& path) {
  if (path.empty()) return std::nullopt;
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream buf;
  buf << in.rdbuf();
  return parse_error_record(buf.str());
}

bool looks_like_comm_error(const WorkerOutcome& outcome) {
  static const char* const kSymptoms[] = {
      "CommError",          "Connection closed by peer", "Connection reset by peer", "Broken pipe",
      "Connection refused", "DistNetworkError",          "DistBackendError",         "ProcessGroupGloo",
      "gloo/transport",     "NCCL communicator",         "ncclRemoteError",          "a peer process probably exited"};
  auto mentions = [](const std::string& text) {
    return std::any_of(std::begin(kSymptoms), std::end(kSymptoms),
                       [&](const char* s) { return text.find(s) != std::string::npos; });
  };
  if (outcome.error) return mentions(outcome.error->message) || mentions(outcome.error->traceback);
  return std::any_of(outcome.stderr_tail.begin(), outcome.stderr_tail.end(), mentions);
}

std::string signal_hint(const os::ExitStatus& status, bool stopped_by_launcher) {
  if (stopped_by_launcher) return "stopped by ddp-launch after another worker failed";
  if (!status.signaled) return "";
  switch (status.signal) {
    case SIGKILL: return "killed outright, often by the out-of-memory killer (check dmesg)";
    case SIGSEGV: return "segmentation fault (a crash in native code)";
    case SIGABRT: return "aborted (a failed assertion or an uncaught C++ exception)";
    case SIGBUS: return "bus error (bad memory access; full /dev/shm?)";
    case SIGFPE: return "arithmetic exception";
    case SIGTERM: return "terminated by a signal from outside";
    default: return "";
  }
}

std::string format_failure_report(const ReportContext& ctx, const WorkerOutcome& root,
                                  const std::vector<WorkerOutcome>& others) {
  const bool hang = is_hang(root.failure);
  const std::string rule(72, '=');
  const std::string thin(72, '-');
  std::string out = rule + "\n";
  out += fmt::format("ddp-launch: {} FAILED", ctx.program);
  if (ctx.max_restarts > 0)
    out += fmt::format(" (after {} restart{}, the most allowed)", ctx.restart_count, ctx.restart_count == 1 ? "" : "s");
  out += "\n" + thin + "\nRoot cause (first failure):\n";
  out += fmt::format("  rank      : {} (local_rank: {})\n", root.rank, root.local_rank);
  out += fmt::format("  host      : {}\n", ctx.host);
  out += fmt::format("  pid       : {}\n", root.pid);
  const std::string stopped = stopped_by_verdict(root);
  out += fmt::format("  exit      : {}\n", stopped.empty() ? describe_exit(root) : stopped);
  out += fmt::format("  time      : {}\n", format_time(root.time));
  out += fmt::format("  error_file: {}\n", root.error ? root.error_file : std::string("<none written>"));
  if (hang) out += format_hang(root);
  else if (has_verdict(root.failure)) out += fmt::format("  verdict   : {}\n", root.verdict);
  if (root.error) {
    out += fmt::format("  error     : {}\n", root.error->message);
    if (!root.error->traceback.empty()) out += "  traceback :\n" + indent(root.error->traceback, "    ");
  } else if (!root.stderr_tail.empty() && !hang) {
    out += "  last stderr lines:\n";
    for (const auto& line : root.stderr_tail) out += "    " + line + "\n";
  }
  if (!root.error && !hang)
    out +=
        "  (C++ workers: wrap main in ddp::run; Python: decorate main with @record, to get the "
        "error here)\n";
  out += thin + "\n";
  if (others.empty()) {
    out += "Other workers: none\n";
  } else {
    out += "Other workers:\n";
    for (const auto& w : others) {
      out += fmt::format("  rank {} (local_rank: {}, pid {}): {}\n", w.rank, w.local_rank, w.pid,
                         w.status.success() && !w.stopped_by_launcher ? "exited 0" : describe_exit(w));
      if (w.error && !w.stopped_by_launcher) out += fmt::format("      error: {}\n", w.error->message);
      if (!w.stacks_file.empty()) out += fmt::format("      stacks: {}\n", w.stacks_file);
    }
  }
  out += rule + "\n";
  return out;
}

std::string format_failure_report(const ReportContext& ctx, const std::vector<WorkerOutcome>& outcomes,
                                  size_t root_cause) {
  std::vector<WorkerOutcome> others;
  for (size_t i = 0; i < outcomes.size(); ++i)
    if (i != root_cause) others.push_back(outcomes[i]);
  return format_failure_report(ctx, outcomes.at(root_cause), others);
}

std::string format_remote_failure_report(const std::string& program, const RemoteFailure& r, int my_node,
                                         const std::string& my_host) {
  const std::string rule(72, '='), thin(72, '-');
  std::string out = rule + "\n" + fmt::format("ddp-launch: {} FAILED on node {} ({})\n", program, r.node_rank, r.host);
  out += thin + "\nRoot cause (first failure):\n";
  out += fmt::format("  node      : {} ({})\n", r.node_rank, r.host);
  if (r.rank >= 0) {
    out += fmt::format("  rank      : {} (local_rank: {})\n", r.rank, r.local_rank);
    out += fmt::format("  pid       : {}\n", r.pid);
  }
  out += fmt::format("  exit      : {}\n", r.exit);
  if (is_hang(r.kind))
    out += fmt::format("  hang      : {}\n  stacks    : {} on node {} ({})\n", r.verdict,
                       r.stacks_file.empty() ? "<none: no run directory>" : r.stacks_file, r.node_rank, r.host);
  else if (!r.verdict.empty()) out += fmt::format("  verdict   : {}\n", r.verdict);
  if (!r.error.empty()) out += fmt::format("  error     : {}\n", r.error);
  if (!r.traceback.empty()) out += "  traceback :\n" + indent(r.traceback, "    ");
  out += thin + "\n" + fmt::format("This node ({}, {}): its workers were stopped by ddp-launch\n", my_node, my_host);
  return out + rule + "\n";
}

std::string launcher_error_record(const WorkerOutcome& root, const ReportContext& ctx) {
  json extra = json::object();
  extra["timestamp"] =
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(root.time.time_since_epoch()).count());
  std::string message;
  if (has_verdict(root.failure)) {
    message = root.verdict;
  } else if (root.error) {
    message = root.error->message;
    if (!root.error->traceback.empty()) extra["py_callstack"] = root.error->traceback;
  } else {
    message = fmt::format("{} rank {} (local_rank {}) on {} failed: {}", ctx.program, root.rank, root.local_rank,
                          ctx.host, root.status.describe());
  }
  json doc = {{"message", {{"message", message}, {"extraInfo", extra}, {"errorCode", failure_exit_code(root)}}}};
  return doc.dump(2);
}

std::string launcher_error_record(const RemoteFailure& root, int exit_code) {
  json extra = json::object();
  extra["timestamp"] = std::to_string(
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count());
  extra["node_rank"] = root.node_rank;
  if (!root.traceback.empty()) extra["py_callstack"] = root.traceback;
  std::string message = !root.verdict.empty() ? root.verdict : root.error;
  if (message.empty())
    message = root.rank >= 0 ? fmt::format("rank {} (local_rank {}) on {} (node {}) failed: {}", root.rank,
                                           root.local_rank, root.host, root.node_rank, root.exit)
                             : fmt::format("node {} ({}): {}", root.node_rank, root.host, root.exit);
  json doc = {{"message", {{"message", message}, {"extraInfo", extra}, {"errorCode", exit_code}}}};
  return doc.dump(2);
}

}  // namespace ddp::launch::report
