

#include "launcher/console/notice.hpp"
#include "launcher/report/termination_log.hpp"
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

namespace ddp::launch::report {
namespace {

// The last non-empty line of text.
std::string last_line(const std::string& text) {
  size_t end = text.size();
  while (end > 0) {
    while (end > 0 && (text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == ' ')) --end;
    const size_t start = text.rfind('\n', end == 0 ? 0 : end - 1);
    const size_t from = start == std::string::npos ? 0 : start + 1;
    if (end > from) return text.substr(from, end - from);
    if (start == std::string::npos) break;
    end = start;
  }
  return "";
}

// The worker's last error line: its error file's message, else its last stderr line.
std::string last_error(const WorkerOutcome& root) {
  if (root.error && !root.error->message.empty()) return last_line(root.error->message);
  for (auto it = root.stderr_tail.rbegin(); it != root.stderr_tail.rend(); ++it)
    if (!last_line(*it).empty()) return last_line(*it);
  return "";
}

}  // namespace

std::string termination_message(const ReportContext& ctx, const WorkerOutcome& root) {
  std::string what = has_verdict(root.failure) && !root.verdict.empty() ? root.verdict : root.status.describe();
  std::string out =
      fmt::format("ddp-launch: rank {} (local_rank {}) on {} failed: {}\n", root.rank, root.local_rank, ctx.host, what);
  out += fmt::format("kind: {}; program: {}; attempt {} of {}\n", to_string(root.failure), ctx.program,
                     ctx.restart_count + 1, ctx.max_restarts + 1);
  const std::string error = last_error(root);
  if (!error.empty()) out += "last error: " + error + "\n";
  return fit_termination_log(out);
}

std::string termination_message(const std::string& program, const RemoteFailure& root) {
  std::string out = root.rank >= 0
                        ? fmt::format("ddp-launch: rank {} (local_rank {}) on node {} ({}) failed: {}\n", root.rank,
                                      root.local_rank, root.node_rank, root.host,
                                      has_verdict(root.kind) && !root.verdict.empty() ? root.verdict : root.exit)
                        : fmt::format("ddp-launch: node {} ({}): {}\n", root.node_rank, root.host, root.exit);
  out += fmt::format("kind: {}; program: {}\n", to_string(root.kind), program);
  const std::string error = last_line(root.error);
  if (!error.empty()) out += "last error: " + error + "\n";
  return fit_termination_log(out);
}

std::string fit_termination_log(const std::string& text) {
  if (text.size() <= kTerminationLogMax) return text;
  size_t cut = kTerminationLogMax - 4;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return text.substr(0, cut) + "...\n";
}

void write_termination_log(const std::string& path, const std::string& message) {
  std::string where = path;
  if (where.empty()) {
    if (::access(kTerminationLogDefault, W_OK) != 0) return;  // not in a pod (or not writable): nowhere
    where = kTerminationLogDefault;
  }
  const std::string text = fit_termination_log(message);
  const int fd = ::open(where.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    console::launcher_notice(fmt::format("cannot write the termination log {}: {}", where, std::strerror(errno)));
    return;
  }
  console::write_all(fd, text);
  ::close(fd);
}

}  // namespace ddp::launch::report
