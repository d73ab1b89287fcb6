// The status board: what this launcher knows of its job right now, for the status endpoint
// (status_endpoint.hpp: /metrics, /status.json, the page). Plain data the owners fill in as
// things happen: the agent (job header, attempt, round, restarts by cause), the Supervisor
// (its workers' rows and states, hang verdicts), the progress monitor (each rank's step, step
// time, last progress, collective, straggler flag: one read per tick, the same samples the
// hang detector reads; every read into the goodput ledger) and the recovery log (each restart's phase durations). Holds
// no pid, path, environment value or token. Single-threaded (the Supervisor's loop) but for the recent events, which
// any thread may add (the snapshot persister logs from its own); no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "launcher/base/failure_kind.hpp"
#include "launcher/report/goodput_ledger.hpp"

namespace ddp::launch::report {

// What operators see, resolved (job_config.hpp holds one): the endpoint (--metrics-port,
// --metrics-addr, --metrics-show-args), the termination log, the job header's backend.
struct StatusSpec {
  bool enabled = false;  // --metrics-port given
  std::string host;      // where to listen (resolve_job: the job's address by default)
  uint16_t port = 0;     // 0: a free one, printed
  bool show_args = false;
  std::string backend;          // the rendezvous backend, for the job header
  std::string termination_log;  // --termination-log ("": /dev/termination-log where writable)
};

enum class WorkerState { kRunning, kSucceeded, kFailed, kStopped };
inline constexpr WorkerState kAllWorkerStates[] = {WorkerState::kRunning, WorkerState::kSucceeded, WorkerState::kFailed,
                                                   WorkerState::kStopped};
const char* to_string(WorkerState state);  // "running", "succeeded", "failed", "stopped"

// One local worker, as of the latest progress tick.
struct RankStatus {
  int rank = 0;
  int local_rank = 0;
  WorkerState state = WorkerState::kRunning;
  bool fed = false;              // its progress record was seen initialised
  uint64_t step = 0;             // steps completed
  std::optional<double> step_s;  // its step time (the sampler's estimate)
  double since_progress_s = 0;   // since its record last changed
  uint64_t collective_seq = 0;   // collectives completed (the last one's number)
  bool straggler = false;        // named a straggler in this attempt
  // Its step time over the last kHistoryS seconds, one point per kHistoryEveryS: (unix s, s).
  std::deque<std::pair<double, double>> step_history;
  static constexpr double kHistoryS = 300;
  static constexpr double kHistoryEveryS = 2;
  void record_step_time(double now_unix_s, double step_s);
};

// Observed durations in fixed buckets (seconds), for a Prometheus histogram.
struct DurationHistogram {
  static constexpr std::array<double, 10> kBounds = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  std::array<unsigned long long, kBounds.size()> cumulative{};  // observations <= each bound
  unsigned long long count = 0;
  double sum = 0;
  void observe(double seconds);
};

struct StatusBoard {
  struct Job {
    std::string program;  // PROGRAM as given (the page only; never a metric label)
    std::string run_id;
    std::string role;
    std::string backend;  // rendezvous backend: static, c10d, etcd
    std::string version;  // ddp-launch's
    std::string host;     // this node's name
    int node_rank = 0;
    int nnodes = 1;
    int max_restarts = 0;
  };
  Job job;
  double started_unix_s = 0;  // when the launcher started
  int attempt = 0;            // restarts so far (TORCHELASTIC_RESTART_COUNT)
  std::optional<int> round;   // multi-node: the rendezvous round
  int world_size = 0;
  std::vector<RankStatus> ranks;                       // this node's workers, by local rank
  std::map<FailureKind, unsigned long long> restarts;  // by the failure that caused them
  std::map<std::string, DurationHistogram> recovery;   // by phase: stop, store, start, first_step, total
  unsigned long long hang_verdicts = 0;                // this node's
  std::map<std::string, std::string> preflight;        // --preflight: each check's worst level here (pass, warn, fail)
  int strikes = 0;                                     // this node's strikes within --strikes' window
  bool spare = false;                                  // this node waits as a hot spare
  std::vector<std::string> left_out;                   // the nodes the latest round left out, and why
  std::optional<std::string> finished;                 // the job's outcome once known
  GoodputLedger goodput;  // this node's wall time, goodput and badput (job_board: from the start)
  // Multi-node, on group rank 0: every node's status endpoint (the page links them).
  struct Node {
    int node_rank = 0;
    std::string host;
    std::string url;  // "http://ADDR:PORT", "" when that node serves none
    // What it joined with: its failed pre-flight checks ("" none), its median core's GFLOP/s (0:
    // not measured), its strikes within the window, its GPUs' NCCL bus bandwidth (0: not measured).
    std::string preflight_failed;
    double cpu_gflops = 0;
    int strikes = 0;
    double nccl_busbw_gbps = 0;
  };
  std::vector<Node> nodes;

  // Recent events for the page: the event log's lines (JSON objects), the newest last.
  static constexpr size_t kRecentEvents = 50;
  void add_event(std::string json_line);          // any thread
  std::deque<std::string> recent_events() const;  // a copy; any thread

  // The attempt's workers start (the Supervisor): one running row per worker.
  void set_workers(const std::vector<std::pair<int, int>>& rank_and_local_rank);
  RankStatus* find_rank(int rank);

 private:
  // The lines behind a lock: copied and assigned with it held, so the board stays a value.
  class Lines {
   public:
    Lines() = default;
    Lines(const Lines& other) : lines_(other.copy()) {}
    Lines& operator=(const Lines& other);
    void add(std::string line, size_t keep);
    std::deque<std::string> copy() const;

   private:
    mutable std::mutex mutex_;
    std::deque<std::string> lines_;
  };
  Lines events_;
};

}  // namespace ddp::launch::report
