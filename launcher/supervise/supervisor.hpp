// Supervisor: runs one attempt of a worker group on a single-threaded Asio loop, the workers
// an os::ChildSet (os/child_set.hpp) with the attempt's policy on top. Child exits (SIGCHLD),
// handled signals, pipe output and the SIGTERM->SIGKILL grace timer are all events; nothing
// polls. The first worker to fail stops the rest (SIGTERM to each
// process group, SIGKILL after the shutdown timeout). Stop signals (default INT, TERM,
// HUP, QUIT) are forwarded and end the attempt; other handled signals (e.g. SIGUSR1) are
// only forwarded. A second stop signal kills the workers at once. The progress monitor
// (progress_monitor.hpp) reads the workers' progress records on the same loop: on a hang
// verdict the supervisor captures every worker's stacks first, then stops them like a
// failure whose root cause is the rank behind (its outcome carries the verdict). An attempt
// check may ask for the same capture before its stop (a hang on another node). Worker exits
// and stragglers go to the event log if one is set; an attempt observer hears of each attempt's
// start and first step. The signals and stop requests are the node's (stop_signals.hpp): the
// Supervisor listens to them; a stop request is a stop signal that says why.
// Once every worker is gone, the processes they left behind (containment.hpp) get SIGTERM, and
// SIGKILL at the stop's deadline (or a grace after a plain end): the attempt ends only when none
// remains, and one notice names them. The loop, the watchdog and the collaborators are its owner's
// (node/node_session.hpp), lent for the Supervisor's life, as is the registry its workers and
// their stack tools start through. The workers' file timers and D-state check (worker_health.hpp)
// give verdicts: an expired timer's worker fails as `watchdog`, a worker stuck in D is the root
// cause of a stop (`d_state`). A worker still there kUnkillableGiveUp after its SIGKILL (asleep in
// the kernel) is no longer waited for: the attempt ends, names it, and says it was not reaped.
// Blocks in run_attempt.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/contain/containment.hpp"
#include "launcher/os/child_registry.hpp"
#include "launcher/os/fifo_lines.hpp"
#include "launcher/os/process.hpp"
#include "launcher/os/watchdog.hpp"
#include "launcher/report/attempt_observer.hpp"
#include "launcher/report/attempt_result.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/report/failure_report.hpp"
#include "launcher/report/status_board.hpp"
#include "launcher/supervise/stop_signals.hpp"
#include "launcher/warm/standby_pool.hpp"
#include "launcher/worker/worker_launch.hpp"

namespace boost::asio {
class io_context;
}

namespace ddp::launch::supervise {

struct SupervisorConfig {
  double shutdown_timeout_s = 30.0;
  std::vector<int> stop_signals;     // forwarded, then the attempt ends
  std::vector<int> forward_signals;  // forwarded only
  double hang_timeout_s = 0;         // --hang-timeout; 0: no hang detection; < 0: auto
  double straggler_threshold = 0;    // --straggler-threshold; 0: no straggler notices
  std::string tool_path;             // PATH to find eu-stack / gdb
  double d_state_timeout_s = 0;      // TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT; 0: no D-state check
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

// What the Supervisor reports to and starts from, borrowed from its owner; each may be null.
struct SupervisorLinks {
  report::EventLog* events = nullptr;           // worker exits, straggler notices
  report::AttemptObserver* observer = nullptr;  // every attempt's start and first step
  report::StatusBoard* board = nullptr;         // the workers' rows, states, progress, hang verdicts
  warm::StandbyPool* standbys = nullptr;        // warm restarts: workers start from its standbys
  contain::Containment* containment = nullptr;  // workers join the job's containment; their leftovers are swept
  os::FifoLines* timer_pipe = nullptr;          // the job's file-timer pipe (TORCHELASTIC_ENABLE_FILE_TIMER)
};

class Supervisor {
 public:
  // signals: the node's (their stop_signals and forward_signals are config's), listened to
  // for the Supervisor's life.
  Supervisor(boost::asio::io_context& loop, os::ChildRegistry& registry, os::Watchdog& watchdog,
             SupervisorConfig config, StopSignals& signals, SupervisorLinks links = {});
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts the workers and returns when every one has exited. Throws LaunchError if a
  // worker cannot be started (the ones already started are killed first).
  report::AttemptResult run_attempt(std::vector<worker::WorkerLaunch> workers, const AttemptCheck& check = {});

  // The standbys (warm restarts) for the next attempt start at this attempt's first step, or
  // this long after its workers started if no step came sooner.
  static constexpr std::chrono::milliseconds kStandbyDelay{1500};
  // How long a worker may outlive its SIGKILL before the attempt stops waiting for it.
  static constexpr std::chrono::seconds kUnkillableGiveUp{5};

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::launch::supervise
