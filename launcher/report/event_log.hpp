// The event log: RUN/events.jsonl, one JSON object per line per event (docs/events.md has
// the schema), for schedulers and dashboards. Every line is one write(2) to an O_APPEND
// file. Never throws: a log that cannot be opened or written warns once and goes quiet (the
// job goes on). The agents own it and set its attempt and node; the Supervisor borrows it;
// write() may also be called from the snapshot persister's thread (it takes a lock).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/report/failure_report.hpp"

namespace ddp::launch::report {

// One field of an event: a string, an integer, a number or a boolean.
struct EventField {
  enum class Type { kString, kInt, kDouble, kBool };
  EventField(std::string k, std::string v) : key(std::move(k)), type(Type::kString), s(std::move(v)) {}
  EventField(std::string k, const char* v) : EventField(std::move(k), std::string(v)) {}
  EventField(std::string k, std::string_view v) : EventField(std::move(k), std::string(v)) {}
  EventField(std::string k, long long v) : key(std::move(k)), type(Type::kInt), i(v) {}
  EventField(std::string k, long v) : EventField(std::move(k), static_cast<long long>(v)) {}
  EventField(std::string k, int v) : EventField(std::move(k), static_cast<long long>(v)) {}
  EventField(std::string k, double v) : key(std::move(k)), type(Type::kDouble), d(v) {}
  EventField(std::string k, bool v) : key(std::move(k)), type(Type::kBool), b(v) {}
  std::string key;
  Type type;
  std::string s;
  long long i = 0;
  double d = 0;
  bool b = false;
};

// Where an event log's lines go besides its file: `tap` gets every line (the status board's
// recent events), with or without a file; `console` (--event-log-handler=console) writes each
// on stderr too ("ddp-launch: event {...}").
struct EventSinks {
  std::function<void(const std::string& line)> tap;
  bool console = false;
};

class EventLog {
 public:
  static constexpr const char* kFileName = "events.jsonl";

  EventLog() = default;  // disabled: write() does nothing
  // Appends to run_dir/events.jsonl ("" run_dir: disabled). node: this node's rank in a
  // multi-node job (every event carries it), -1 for a single node. sinks: where every line
  // goes besides the file.
  EventLog(const std::string& run_dir, int node = -1, EventSinks sinks = {});
  ~EventLog();
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  void set_attempt(int attempt) { attempt_ = attempt; }
  void set_node(int node) { node_ = node; }
  int attempt() const { return attempt_; }
  int node() const { return node_; }
  // {"event": name, "time": ISO 8601 UTC, "attempt": N, ["node": N,] fields...}
  void write(const std::string& event, const std::vector<EventField>& fields = {});
  // The same with "time" = `time` rather than now: an event logged after it happened.
  void write(const std::string& event, const std::vector<EventField>& fields,
             std::chrono::system_clock::time_point time);

 private:
  std::string path_;
  std::mutex mutex_;  // write() from more than one thread
  int fd_ = -1;
  std::atomic<int> attempt_{0};
  std::atomic<int> node_{-1};
  bool warned_ = false;
  bool console_ = false;
  std::function<void(const std::string&)> tap_;
  void fail(const std::string& what, int err);
};

// A worker's exit: rank, local_rank, pid, exit_code or signal, stopped_by_launcher.
void log_worker_exit(EventLog& log, const WorkerOutcome& o);
// A failure whose root cause is a worker of this node (final: no restart follows).
void log_worker_failure(EventLog& log, const WorkerOutcome& root, bool final);

}  // namespace ddp::launch::report
