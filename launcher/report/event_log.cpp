

#include "launcher/base/signal_names.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/process.hpp"
#include "launcher/report/event_log.hpp"
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

namespace ddp::launch::report {
namespace {

// "2026-11-30T11:06:53.123Z"
std::string utc_time(std::chrono::system_clock::time_point now) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return fmt::format("{}.{:03d}Z", buf, static_cast<int>(ms % 1000));
}

void put(nlohmann::ordered_json& j, const EventField& f) {
  switch (f.type) {
    case EventField::Type::kString: j[f.key] = f.s; break;
    case EventField::Type::kInt: j[f.key] = f.i; break;
    case EventField::Type::kDouble: j[f.key] = f.d; break;
    case EventField::Type::kBool: j[f.key] = f.b; break;
  }
}

}  // namespace

EventLog::EventLog(const std::string& run_dir, int node, EventSinks sinks)
    : node_(node), console_(sinks.console), tap_(std::move(sinks.tap)) {
  if (run_dir.empty()) return;
  path_ = run_dir + "/" + kFileName;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("open", errno);
}

EventLog::~EventLog() {
  if (fd_ >= 0) ::close(fd_);
}

void EventLog::fail(const std::string& what, int err) {
  if (!warned_)
    console::launcher_notice(fmt::format("warning: cannot {} the event log {}: {}; the job goes on without it", what,
                                         path_, std::strerror(err)));
  warned_ = true;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void EventLog::write(const std::string& event, const std::vector<EventField>& fields) {
  write(event, fields, std::chrono::system_clock::now());
}

void EventLog::write(const std::string& event, const std::vector<EventField>& fields,
                     std::chrono::system_clock::time_point time) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (fd_ < 0 && !tap_ && !console_) return;
  nlohmann::ordered_json j;
  j["event"] = event;
  j["time"] = utc_time(time);
  j["attempt"] = attempt_.load();
  if (const int node = node_.load(); node >= 0) j["node"] = node;
  for (const EventField& f : fields) put(j, f);
  // Invalid UTF-8 (a worker's bytes in a message) is replaced, never thrown.
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (tap_) tap_(line);
  if (console_) console::launcher_notice("event " + line.substr(0, line.size() - 1));
  if (fd_ < 0) return;
  ssize_t n = ::write(fd_, line.data(), line.size());
  if (n != static_cast<ssize_t>(line.size())) fail("write", n < 0 ? errno : ENOSPC);
}

void log_worker_exit(EventLog& log, const WorkerOutcome& o) {
  std::vector<EventField> f = {{"rank", o.rank}, {"local_rank", o.local_rank}, {"pid", o.pid}};
  if (o.status.vanished) f.emplace_back("status", "unknown");
  else if (o.status.signaled) f.emplace_back("signal", signal_name(o.status.signal));
  else f.emplace_back("exit_code", o.status.code);
  f.emplace_back("stopped_by_launcher", o.stopped_by_launcher);
  log.write("worker_exit", f);
}

void log_worker_failure(EventLog& log, const WorkerOutcome& root, bool final) {
  std::vector<EventField> f = {{"kind", to_string(root.failure)},      {"rank", root.rank},
                               {"local_rank", root.local_rank},        {"pid", root.pid},
                               {"exit_code", failure_exit_code(root)}, {"final", final}};
  if (has_verdict(root.failure)) f.emplace_back("verdict", root.verdict);
  if (!is_hang(root.failure)) f.emplace_back("status", root.status.describe());
  if (!root.stacks_file.empty()) f.emplace_back("stacks_file", root.stacks_file);
  if (root.error) f.emplace_back("error", root.error->message);
  log.write("failure", f);
}

}  // namespace ddp::launch::report
