// NodeSession: one node's services for a whole job, built once, in one place, for the one agent
// loop (agent_loop.hpp) whichever RoundSource feeds it: the job's stop signals and a many-host
// agent's stdin, the run layout, the event log (its `start` event), the status board and
// endpoint, the recovery log, the snapshot regions and their persister, the job's end
// (JobEnd), the registry every child of the node starts through (os::ChildRegistry), the
// containment of the workers' processes, the warm standbys, the orphan watchdog, the workers'
// store (WorkerStoreHost), the workers' file-timer pipe and the health check port (torchrun
// 2.15's TORCHELASTIC_* variables) and the Supervisor, all on one event loop this session owns and lends,
// each collaborator given to its constructor. Members are built in
// declaration order and go in reverse, so each outlives what borrows it. run_attempt and
// after_attempt hold what every attempt does around the Supervisor: counters, the recovery
// timeline's marks, the persist policy. Single-threaded (the snapshot persister has its own
// thread).
#pragma once

#include <memory>
#include <optional>

#include <boost/asio/io_context.hpp>

#include "launcher/base/failure_kind.hpp"
#include "launcher/cli/environment.hpp"
#include "launcher/node/job_config.hpp"
#include "launcher/node/job_end.hpp"
#include "launcher/node/worker_store_host.hpp"
#include "launcher/contain/containment.hpp"
#include "launcher/os/child_registry.hpp"
#include "launcher/os/fifo_lines.hpp"
#include "launcher/os/watchdog.hpp"
#include "launcher/report/attempt_result.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/report/recovery_log.hpp"
#include "launcher/report/status_board.hpp"
#include "launcher/snapshot/snapshot_regions.hpp"
#include "launcher/status/health_check.hpp"
#include "launcher/status/status_endpoint.hpp"
#include "launcher/supervise/stop_input.hpp"
#include "launcher/supervise/stop_signals.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "launcher/warm/standby_pool.hpp"
#include "launcher/worker/run_layout.hpp"

namespace ddp::launch::node {

// Where the session's node sits, for its reports: the event log's node (-1: none, a single
// node) and the status board's header.
struct NodeSeat {
  int event_node = -1;
  int node_rank = 0;
  int nnodes = 1;
};

// Why the newest snapshot goes to disk once an attempt's workers are gone (nullopt: not now).
// job_ends: no restart follows; stopping: a stop signal came; membership: the round ends only
// for a bigger one. Pure.
std::optional<snapshot::PersistReason> persist_reason(report::AttemptResult::Kind kind, bool job_ends, bool stopping,
                                                      bool membership);

class NodeSession {
 public:
  // Sets the node up (notices, the run directory, the `start` event, the endpoint listening).
  // stop_input (fd -1: none): the launching machine's session, watched on the loop; its stop
  // requests go to the Supervisor. Throws
  // LaunchError as the parts do (a --metrics-port in use).
  NodeSession(const JobConfig& job, const cli::Environment& env, const NodeSeat& seat,
              const supervise::StopInputSpec& stop_input = {});
  ~NodeSession();
  NodeSession(const NodeSession&) = delete;
  NodeSession& operator=(const NodeSession&) = delete;

  supervise::Supervisor& supervisor() { return supervisor_; }
  // The job's stop signals and requests, and the waits between attempts they end.
  supervise::StopSignals& stops() { return stop_signals_; }
  worker::RunLayout& layout() { return layout_; }
  report::EventLog& events() { return events_; }
  report::StatusBoard& board() { return board_; }
  report::RecoveryLog& recovery() { return recovery_; }
  snapshot::SnapshotRegions& snapshots() { return snapshots_; }
  const status::StatusEndpoint* endpoint() const { return endpoint_.get(); }
  JobEnd& end() { return end_; }
  os::ChildRegistry& children() { return children_; }  // the node's children (pre-flight's probe)
  WorkerStoreHost& worker_store() { return worker_store_; }

  // Attempt `restart_count` of `world_size` ranks begins: the event log's and the board's
  // attempt, and whether standbys are kept for a restart after it.
  void begin_attempt(int restart_count, int world_size);
  // Runs the attempt on the Supervisor, marking the recovery timeline around it.
  report::AttemptResult run_attempt(std::vector<worker::WorkerLaunch> launches,
                                    const supervise::AttemptCheck& check = {});
  // The attempt's workers are gone: their newest snapshot to disk, in the background, for
  // persist_reason's reason (a restart does not wait for it; the job's end does).
  void after_attempt(const report::AttemptResult& result, bool job_ends, bool membership = false);
  // A hot spare warms its standbys (warm restarts) for workers it may run later: one per launch.
  // Whether it keeps any (false: restarts are cold for this program).
  bool warm_standbys(const std::vector<worker::WorkerLaunch>& launches);
  // A restart follows a failure of `kind`: counted on the board.
  void count_restart(FailureKind kind) { ++board_.restarts[kind]; }

 private:
  const JobConfig& job_;
  boost::asio::io_context loop_;                           // first: every part below uses it
  supervise::StopSignals stop_signals_;                    // the job's signals and stop requests
  std::unique_ptr<supervise::StopInputWatch> stop_input_;  // null without one
  worker::RunLayout layout_;
  report::StatusBoard board_;  // before the event log: its tap writes here
  report::EventLog events_;
  report::RecoveryLog recovery_;
  snapshot::SnapshotRegions snapshots_;  // its persister writes to events_
  JobEnd end_;
  os::ChildRegistry children_;        // before everything that starts a child
  contain::Containment containment_;  // before the watchdog, which sweeps as it says
  os::Watchdog watchdog_;
  std::unique_ptr<warm::StandbyPool> standbys_;  // null without warm restarts
  WorkerStoreHost worker_store_;                 // before the Supervisor: it outlives the workers
  std::unique_ptr<os::FifoLines> timer_pipe_;    // TORCHELASTIC_ENABLE_FILE_TIMER: the workers' timers; null without
  supervise::Supervisor supervisor_;
  std::unique_ptr<status::StatusEndpoint> endpoint_;           // --metrics-port; on loop_
  std::unique_ptr<status::HealthCheckEndpoint> health_check_;  // TORCHELASTIC_HEALTH_CHECK_PORT; on loop_
};

}  // namespace ddp::launch::node
