// Supervisor::Impl, the Asio implementation of Supervisor (supervisor.hpp), shared by the files
// that define its parts: supervisor.cpp (the attempt: start, exits, the result),
// supervisor_stops.cpp (what a stop signal does to the attempt: the stop and its drain) and supervisor_watch.cpp (the
// attempt's check tick, hang verdicts and stack capture, warm standbys). One io_context, the workers as an os::ChildSet
// (SIGCHLD, their pipes, the grace and drain deadline; each worker's output into worker_streams.hpp), the node's
// StopSignals listened to, the check, stack-capture and standby timers, the progress monitor (progress_monitor.hpp) and
// the terminal's live lines (live_console.hpp). Internal.
#pragma once

#include "contract/progress_file.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/contain/leftover_report.hpp"
#include "launcher/contain/leftover_sweep.hpp"
#include "launcher/os/child_set.hpp"
#include "launcher/os/watchdog.hpp"
#include "launcher/progress/progress_monitor.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/report/status_board.hpp"
#include "launcher/supervise/live_console.hpp"
#include "launcher/supervise/stack_capture.hpp"
#include "launcher/supervise/stop_signals.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "launcher/supervise/worker_health.hpp"
#include "launcher/supervise/worker_streams.hpp"
#include "launcher/warm/standby_pool.hpp"
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <signal.h>

namespace ddp::launch::supervise {
namespace asio = boost::asio;
using Clock = std::chrono::system_clock;
inline constexpr std::chrono::seconds kDrain{2};               // after the last worker exits, for its grandchildren
inline constexpr std::chrono::milliseconds kPythonDump{2000};  // SIGABRT -> SIGTERM, for faulthandler

struct Worker {
  worker::WorkerLaunch launch;
  std::unique_ptr<WorkerStreams> streams;  // its stdout and stderr, as the child set reads them
  std::optional<report::WorkerOutcome> outcome;
  bool warm = false;                     // an adopted standby
  std::optional<HealthVerdict> verdict;  // its expired timer, or its D state
};

struct Supervisor::Impl {
  Impl(asio::io_context& loop, os::ChildRegistry& registry, os::Watchdog& dog, SupervisorConfig c, StopSignals& signals,
       SupervisorLinks l);
  ~Impl();

  SupervisorConfig config;
  asio::io_context& io;
  os::ChildRegistry& registry;  // the node's: every child starts and is reaped through it
  os::Watchdog& watchdog;
  warm::StandbyPool* standbys;        // borrowed (null: no warm restarts)
  report::EventLog* events;           // borrowed
  report::StatusBoard* board;         // borrowed
  StopSignals& signals;               // the node's, for the job: this attempt listens
  contain::Containment* containment;  // borrowed (null: no sweep)
  os::ChildSet children;              // the workers: ids are indices into `workers`
  asio::steady_timer tick_timer;
  asio::steady_timer capture_timer;           // Python's stack dump, then the stop
  asio::steady_timer standby_timer;           // the attempt's workers are up: keep standbys
  asio::steady_timer give_up_timer;           // kUnkillableGiveUp after the stop's SIGKILL
  WorkerHealth health;                        // file timers and the D-state check
  bool standbys_started = false;              // this attempt's standbys were asked for
  progress::ProgressMonitor monitor;          // hang verdicts and straggler notices
  std::optional<progress::HangVerdict> hang;  // this attempt's verdict
  bool stacks_captured = false;               // this attempt's workers' stacks were taken
  LiveConsole console;                        // the terminal's live lines
  int warm_started = 0;                       // this attempt's workers started from standbys
  AttemptCheck check;
  std::optional<std::string> stop_reason;                              // the check stopped the workers
  std::optional<contain::LeftoverSweep> sweep;                         // with a containment
  bool sweep_started = false;                                          // this attempt's
  std::optional<std::chrono::steady_clock::time_point> stop_deadline;  // the stop's SIGKILL

  std::vector<Worker> workers;
  bool attempt_running = false;
  bool stopping = false;             // SIGTERM (or a forwarded stop signal) went out
  std::optional<size_t> root_cause;  // first worker that failed by itself
  unsigned attempt_id = 0;           // a timer handler acts only on the attempt that armed it

  report::AttemptObserver* observer;  // borrowed

  // --- events -------------------------------------------------------------------------
  // A stop signal (or a stop request, as SIGTERM): the first stops the attempt's workers, a
  // later one kills them now.
  void on_stop_signal(int signo, bool first);
  // Another handled signal: forwarded to the running workers.
  void on_forward_signal(int signo);

  // Worker i was reaped (the child set's SIGCHLD): its outcome; the first failure stops the rest.
  void on_exit(size_t i, const os::ExitStatus& status);

  // After each reaping pass: with every worker gone, the drain and the sweep begin.
  void after_reap();

  // Every worker is gone: what they left behind gets SIGTERM now and SIGKILL at the stop's
  // deadline, or a grace from now after a plain end. Once per attempt, as the drain.
  void begin_sweep();

  // The processes the sweep ended: one notice, and a `leftover` event each.
  void report_leftovers();

  os::ChildSet::Duration grace() const;

  // Every worker has exited: give a lingering grandchild that holds a pipe kDrain to let go,
  // then stop reading. Armed once per attempt, and only while this attempt's workers are
  // registered: a SIGCHLD left over from the previous attempt (several exits coalesce into
  // one signal, and one may still be queued when that attempt ends) is handled by the next
  // run_attempt's first poll, before its workers exist; arming the drain then closed the new
  // attempt's pipes 2 s later and lost its output.
  void arm_drain();

  // Signals every worker's process group, the exited ones' too: a failed worker's children
  // (data loaders, `sh -c`, multiprocessing) are stopped with the rest at once, instead of
  // holding its pipes through the drain. The drain (all workers gone) keeps its own timer.
  void begin_stop(int signo);

  void schedule_tick();

  void run_tick();

  // --- the status board ------------------------------------------------------------
  void board_workers();

  void mark_exit(const report::WorkerOutcome& o);

  // --- worker health (supervisor_health.cpp) -----------------------------------------------
  void start_health();
  // A file timer expired (its signal is sent: the worker's failure is a `watchdog` one), or a
  // worker stayed in D (the root cause: the attempt stops).
  void on_health(const HealthVerdict& v);
  // The stop's SIGKILL went: kUnkillableGiveUp later, what still runs is no longer waited for.
  void arm_give_up();
  void give_up_unkillable();

  // --- hangs -------------------------------------------------------------------------
  void start_progress_monitor();

  // The verdict, then every live worker's stacks, and only then the stop.
  void on_hang(progress::HangVerdict verdict);

  // Every live worker's stacks (native, then Python via SIGABRT: a stopped worker is
  // continued for it, and given kPythonDump before SIGTERM could cut its faulthandler
  // short), then the stop: SIGTERM, and SIGCONT. From now on no exit is a root cause.
  void capture_then_stop();

  // The observer hears of the workers' start now (of their first step: the progress monitor).
  void observe_start();

  // --- helpers -------------------------------------------------------------------------
  size_t count_live() const { return children.running_count(); }

  // Hands each worker to its local rank's standby where one is kept (its pid becomes the
  // worker's), else forks it; forks every cold worker first and only then waits for their
  // execs, so they exec in parallel. Worker i is child i of the set.
  void start(std::vector<worker::WorkerLaunch> launches);

  // A worker could not be started: kill and reap what did start, forget them all.
  void abort_start();

  // Once the attempt's workers are up (they compete for the CPUs with a starting standby:
  // docs/warm-restarts.md), a standby per local rank for the next restart: at the attempt's
  // first step (its workers' own start is done) or kStandbyDelay after the start, whichever
  // comes first.
  void arm_standbys();

  void start_standbys();

  // A worker passed the script's standby point (the features of its progress record, fed or
  // not): the pool prepares its Python standbys from now on (docs/warm-restarts.md).
  void look_for_standby_point();

  report::AttemptResult finish();
};

}  // namespace ddp::launch::supervise
