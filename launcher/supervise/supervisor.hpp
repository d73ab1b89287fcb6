// Supervisor: runs one attempt of a worker group on a single-threaded Asio loop. Child
// exits (SIGCHLD), handled signals, pipe output and the SIGTERM->SIGKILL grace timer are
// all events; nothing polls. The first worker to fail stops the rest (SIGTERM to each
// process group, SIGKILL after the shutdown timeout). Stop signals (default INT, TERM,
// HUP, QUIT) are forwarded and end the attempt; other handled signals (e.g. SIGUSR1) are
// only forwarded. A second stop signal kills the workers at once. The progress monitor
// (progress_monitor.hpp) reads the workers' progress records on the same loop: on a hang
// verdict the supervisor captures every worker's stacks first, then stops them like a
// failure whose root cause is the rank behind (its outcome carries the verdict). An attempt
// check may ask for the same capture before its stop (a hang on another node). Worker exits
// and stragglers go to the event log if one is set; an attempt observer hears of each attempt's
// start and first step. Blocks in run_attempt.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/supervise/attempt_observer.hpp"
#include "launcher/supervise/failure_report.hpp"
#include "launcher/supervise/standby_plan.hpp"
#include "launcher/os/process.hpp"
#include "launcher/worker/output.hpp"

namespace boost::asio {
class io_context;
}

namespace ddp::launch::supervise {

struct WorkerLaunch {
  int rank = 0;
  int local_rank = 0;
  os::SpawnSpec spawn;     // stdout_fd/stderr_fd are set by the supervisor (pipes)
  std::string error_file;  // TORCHELASTIC_ERROR_FILE given to the worker
  std::string prefix;      // console line prefix
  bool stdout_to_console = true;
  bool stderr_to_console = true;
  std::string stdout_log;  // "" = no file
  std::string stderr_log;
  // --duplicate-*-filters: the attempt's filtered_{stdout,stderr}.log, for a tee'd stream
  // of a rank on the console (null: its lines are not copied).
  std::shared_ptr<worker::DuplicateLog> stdout_duplicate;
  std::shared_ptr<worker::DuplicateLog> stderr_duplicate;
  std::string progress_file;  // the progress record it feeds ("": not monitored)
  std::string stacks_file;    // where a hang's post-mortem goes
  bool python = false;        // gets SIGABRT after the native capture (faulthandler)
};

struct AttemptResult {
  enum class Kind { kSucceeded, kFailed, kInterrupted, kStopped };
  Kind kind = Kind::kSucceeded;
  std::string stop_reason;              // when kStopped: why the check stopped the workers
  std::vector<WorkerOutcome> outcomes;  // one per worker, in local-rank order
  std::optional<size_t> root_cause;     // index into outcomes when kFailed
  int signal = 0;                       // when kInterrupted
  int workers_started_warm = 0;         // adopted standbys (warm restarts); the rest started cold
};

struct SupervisorConfig {
  double shutdown_timeout_s = 30.0;
  std::vector<int> stop_signals;     // forwarded, then the attempt ends
  std::vector<int> forward_signals;  // forwarded only
  double hang_timeout_s = 0;         // --hang-timeout; 0: no hang detection; < 0: auto
  double straggler_threshold = 0;    // --straggler-threshold; 0: no straggler notices
  std::string tool_path;             // PATH to find eu-stack / gdb
};

// A periodic check while workers run (multi-node: heartbeat, and check the round). tick()
// must not throw; it returns a reason to stop every worker, or nullopt to go on.
struct AttemptCheck {
  std::chrono::milliseconds interval{0};  // 0: no ticks
  std::function<std::optional<std::string>()> tick;
  // Asked when tick() returned a reason: true (a hang elsewhere) captures every live
  // worker's stacks, as for a local hang verdict, before stopping them. May be empty.
  std::function<bool()> capture_stacks;
};

class EventLog;
struct StatusBoard;

class Supervisor {
 public:
  explicit Supervisor(SupervisorConfig config);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts the workers and returns when every one has exited. Throws LaunchError if a
  // worker cannot be started (the ones already started are killed first).
  AttemptResult run_attempt(std::vector<WorkerLaunch> workers, const AttemptCheck& check = {});

  // With no workers running: calls done() every interval until it returns true (0 is
  // returned) or a stop signal arrives during the call (the first stop signal received is
  // returned). One received before the call does not end it: after a stop the agent still
  // waits, briefly, for the other nodes to read the outcome. Used for barriers.
  int wait_until(std::chrono::milliseconds interval, const std::function<bool()>& done);

  // Thread-safe: runs the attempt's check (or wait_until's done()) now, on the loop,
  // rather than at its next interval; does nothing when neither runs. For an event source
  // on another thread (the multi-node agent's abort wait thread: a store key appeared).
  void wake();

  // Where worker exits and straggler notices are logged (null: nowhere); borrowed.
  void set_event_log(EventLog* log);
  // Told of every attempt's start and first step (null: nobody); borrowed.
  void set_attempt_observer(AttemptObserver* observer);
  // Where the workers' rows, states, progress and hang verdicts go (status_board.hpp; null:
  // nowhere); borrowed. With one set the progress monitor always ticks.
  void set_status_board(StatusBoard* board);
  // The loop everything above runs on, for a server that shares it (status_endpoint.hpp).
  boost::asio::io_context& loop();

  // Warm restarts (standby_pool.hpp): from now on each attempt starts its workers from the
  // standbys kept for their local ranks where it can (the rest cold) and, once its workers
  // are up (kStandbyDelay), keeps a standby per local rank while set_standbys_wanted(true)
  // (the agent: a restart is left). A plan of kind kNone keeps none.
  void enable_standbys(StandbyPlan plan);
  // For the next run_attempt: false kills the standbys it did not adopt, once its workers started.
  void set_standbys_wanted(bool wanted);
  // How many of the last attempt's workers were started warm.
  int workers_started_warm() const;
  static constexpr std::chrono::milliseconds kStandbyDelay{1500};

  // The stop signal received so far (0 if none): the agent stops restarting once set.
  int interrupted_by() const;
  // Delivers pending signals without blocking, then returns interrupted_by().
  int poll_signals();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::launch::supervise
