// Asio implementation of Supervisor: one io_context, the workers as an os::ChildSet (SIGCHLD,
// their pipes, the grace and drain deadline; each worker's output into worker_streams.hpp), a
// signal_set for the handled signals, the check, stack-capture and standby timers, the progress
// monitor (progress_monitor.hpp) and the terminal's live lines (live_console.hpp).

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
#include "launcher/supervise/stop_requests.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "launcher/supervise/worker_streams.hpp"
#include "launcher/warm/standby_pool.hpp"
#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <fmt/format.h>
#include <signal.h>

namespace ddp::launch::supervise {
namespace asio = boost::asio;
using Clock = std::chrono::system_clock;
constexpr std::chrono::seconds kDrain{2};               // after the last worker exits, for its grandchildren
constexpr std::chrono::milliseconds kPythonDump{2000};  // SIGABRT -> SIGTERM, for faulthandler

namespace {

struct Worker {
  worker::WorkerLaunch launch;
  std::unique_ptr<WorkerStreams> streams;  // its stdout and stderr, as the child set reads them
  std::optional<report::WorkerOutcome> outcome;
  bool warm = false;  // an adopted standby
};

}  // namespace

struct Supervisor::Impl {
  Impl(asio::io_context& loop, os::Watchdog& dog, SupervisorConfig c, SupervisorLinks l)
      : config(std::move(c)),
        io(loop),
        watchdog(dog),
        standbys(l.standbys),
        events(l.events),
        board(l.board),
        stops(l.stops),
        containment(l.containment),
        children(
            io, [this](size_t i, const os::ExitStatus& status) { on_exit(i, status); },
            [this] {
              os::reap_adopted_orphans();  // a worker's orphan that ended: no one else waits for it
              after_reap();
              if (standbys) standbys->reap();
            }),
        handled_signals(io),
        tick_timer(io),
        capture_timer(io),
        standby_timer(io),
        monitor(io, {config.hang_timeout_s, config.straggler_threshold}),
        console(io),
        observer(l.observer) {
    if (containment) sweep.emplace(io, *containment);
    for (int s : config.stop_signals) handled_signals.add(s);
    for (int s : config.forward_signals) handled_signals.add(s);
    monitor.set_event_log(events);
    monitor.set_status_board(board);
    wait_for_signals();
    if (stops) stops->attach(io, [this](const std::string& reason) { on_stop_request(reason); });
  }
  ~Impl() {
    if (stops) stops->detach();
  }

  SupervisorConfig config;
  asio::io_context& io;
  os::Watchdog& watchdog;
  warm::StandbyPool* standbys;        // borrowed (null: no warm restarts)
  report::EventLog* events;           // borrowed
  report::StatusBoard* board;         // borrowed
  StopRequests* stops;                // borrowed
  contain::Containment* containment;  // borrowed (null: no sweep)
  os::ChildSet children;              // the workers: ids are indices into `workers`
  asio::signal_set handled_signals;
  asio::steady_timer tick_timer;
  asio::steady_timer capture_timer;           // Python's stack dump, then the stop
  asio::steady_timer standby_timer;           // the attempt's workers are up: keep standbys
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
  std::function<void()> on_wake;                                       // what wake() runs now (loop thread only)

  std::vector<Worker> workers;
  bool attempt_running = false;
  bool stopping = false;                 // SIGTERM (or a forwarded stop signal) went out
  int interrupt_signal = 0;              // a stop signal the launcher received
  std::optional<std::string> stop_note;  // what the stop's asker said (a stop request)
  unsigned stops_received = 0;           // how many stop signals arrived (wait_until ends on a new one)
  std::optional<size_t> root_cause;      // first worker that failed by itself
  unsigned attempt_id = 0;               // a timer handler acts only on the attempt that armed it

  report::AttemptObserver* observer;  // borrowed

  // --- events -------------------------------------------------------------------------
  void wait_for_signals() {
    handled_signals.async_wait([this](const boost::system::error_code& ec, int signo) {
      if (ec) return;
      on_signal(signo);
      wait_for_signals();
    });
  }

  void on_signal(int signo) {
    bool is_stop =
        std::find(config.stop_signals.begin(), config.stop_signals.end(), signo) != config.stop_signals.end();
    if (is_stop) ++stops_received;
    if (!is_stop) {
      console::launcher_notice(fmt::format("forwarding {} to the workers", signal_name(signo)));
      children.signal_running(signo);
      return;
    }
    if (interrupt_signal != 0) {
      console::launcher_notice(fmt::format("second {}: killing the workers now", signal_name(signo)));
      children.kill();
      if (sweep) sweep->kill_now();
      return;
    }
    interrupt_signal = signo;
    if (!attempt_running) return;
    console::launcher_notice(
        fmt::format("received {}{}: forwarding it to the workers, SIGKILL after {} s (send it "
                    "again to kill them now)",
                    signal_name(signo), stop_note ? " (" + *stop_note + ")" : "", config.shutdown_timeout_s));
    begin_stop(signo);
  }

  // Another thread asked for a stop and said why: a SIGTERM whose reports tell the reason.
  void on_stop_request(const std::string& reason) {
    if (!stop_note) stop_note = reason;
    on_signal(SIGTERM);
  }

  // Worker i was reaped (the child set's SIGCHLD): its outcome; the first failure stops the rest.
  void on_exit(size_t i, const os::ExitStatus& status) {
    Worker& w = workers[i];
    report::WorkerOutcome o;
    o.rank = w.launch.rank;
    o.local_rank = w.launch.local_rank;
    o.pid = children.pid(i);
    o.status = status;
    o.time = Clock::now();
    o.error_file = w.launch.error_file;
    o.error = report::read_error_file(w.launch.error_file);
    // A vanished worker's end is unknown (ECHILD): never claim the launcher stopped it.
    o.stopped_by_launcher =
        stopping && !status.vanished &&
        (status.signaled ? (status.signal == SIGTERM || status.signal == SIGKILL || status.signal == interrupt_signal ||
                            (stacks_captured && w.launch.python && status.signal == SIGABRT))
                         : status.code == 0 || interrupt_signal != 0);
    o.failure = status.signaled ? FailureKind::kSignal : FailureKind::kCrash;
    if (events) log_worker_exit(*events, o);
    if (board) mark_exit(o);
    w.outcome = std::move(o);
    if (status.success() || stopping || interrupt_signal != 0) return;
    root_cause = i;
    size_t live = count_live();
    console::launcher_notice(fmt::format("rank {} (local_rank {}, pid {}) failed with {}{}", w.launch.rank,
                                         w.launch.local_rank, children.pid(i), status.describe(),
                                         live ? fmt::format("; stopping the other {} worker{} (SIGTERM, SIGKILL "
                                                            "after {} s)",
                                                            live, live == 1 ? "" : "s", config.shutdown_timeout_s)
                                              : ""));
    begin_stop(SIGTERM);
  }

  // After each reaping pass: with every worker gone, the drain and the sweep begin.
  void after_reap() {
    if (count_live() > 0) return;
    arm_drain();
    begin_sweep();
  }

  // Every worker is gone: what they left behind gets SIGTERM now and SIGKILL at the stop's
  // deadline, or a grace from now after a plain end. Once per attempt, as the drain.
  void begin_sweep() {
    if (!sweep || !attempt_running || workers.empty() || sweep_started) return;
    sweep_started = true;
    sweep->start(stop_deadline.value_or(std::chrono::steady_clock::now() + grace()));
  }

  // The processes the sweep ended: one notice, and a `leftover` event each.
  void report_leftovers() {
    if (!sweep) return;
    const contain::SweepReport r = sweep->take_report();
    if (r.empty()) return;
    console::launcher_notice(contain::leftover_notice(r));
    if (!events) return;
    auto log = [this](const std::vector<contain::Leftover>& list, const char* ended_by) {
      for (const contain::Leftover& l : list)
        events->write("leftover", {{"pid", static_cast<long>(l.process.pid)},
                                   {"command", l.command},
                                   l.rank ? report::EventField("rank", *l.rank) : report::EventField("rank", "unknown"),
                                   {"ended_by", ended_by}});
    };
    log(r.stopped, "SIGTERM");
    log(r.killed, "SIGKILL");
    log(r.remaining, "none");
  }

  os::ChildSet::Duration grace() const {
    return std::chrono::duration_cast<os::ChildSet::Duration>(std::chrono::duration<double>(config.shutdown_timeout_s));
  }

  // Every worker has exited: give a lingering grandchild that holds a pipe kDrain to let go,
  // then stop reading. Armed once per attempt, and only while this attempt's workers are
  // registered: a SIGCHLD left over from the previous attempt (several exits coalesce into
  // one signal, and one may still be queued when that attempt ends) is handled by the next
  // run_attempt's first poll, before its workers exist; arming the drain then closed the new
  // attempt's pipes 2 s later and lost its output.
  void arm_drain() {
    if (!attempt_running || workers.empty()) return;
    children.drain_after(kDrain);  // once per attempt; a lingering grandchild holds a pipe: stop waiting
  }

  // Signals every worker's process group, the exited ones' too: a failed worker's children
  // (data loaders, `sh -c`, multiprocessing) are stopped with the rest at once, instead of
  // holding its pipes through the drain. The drain (all workers gone) keeps its own timer.
  void begin_stop(int signo) {
    stopping = true;
    monitor.stop();
    stop_deadline = std::chrono::steady_clock::now() + grace();
    children.begin_stop(signo, grace(), [this](size_t live) {
      console::launcher_notice(fmt::format("{} worker{} still running {} s after SIGTERM: sending SIGKILL", live,
                                           live == 1 ? "" : "s", config.shutdown_timeout_s));
    });
  }

  void schedule_tick() {
    if (check.interval.count() <= 0 || !check.tick) return;
    tick_timer.expires_after(check.interval);
    tick_timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec || !attempt_running) return;
      run_tick();
      schedule_tick();
    });
  }

  void run_tick() {
    std::optional<std::string> reason = check.tick();
    if (reason && !stopping && interrupt_signal == 0 && count_live() > 0) {
      stop_reason = reason;
      console::launcher_notice(fmt::format("{}; stopping the {} local worker{} (SIGTERM, SIGKILL after {} s)", *reason,
                                           count_live(), count_live() == 1 ? "" : "s", config.shutdown_timeout_s));
      if (check.capture_stacks && check.capture_stacks()) capture_then_stop();  // a hang elsewhere
      else begin_stop(SIGTERM);
    }
  }

  // --- the status board ------------------------------------------------------------
  void board_workers() {
    if (!board) return;
    std::vector<std::pair<int, int>> rows;
    for (const Worker& w : workers) rows.emplace_back(w.launch.rank, w.launch.local_rank);
    board->set_workers(rows);
  }

  void mark_exit(const report::WorkerOutcome& o) {
    report::RankStatus* row = board->find_rank(o.rank);
    if (!row) return;
    row->state = o.status.success()      ? report::WorkerState::kSucceeded
                 : o.stopped_by_launcher ? report::WorkerState::kStopped
                                         : report::WorkerState::kFailed;
  }

  // --- hangs -------------------------------------------------------------------------
  void start_progress_monitor() {
    std::vector<progress::ProgressMonitor::Worker> monitored;
    for (size_t i = 0; i < workers.size(); ++i)
      monitored.push_back(
          {workers[i].launch.rank, static_cast<long>(children.pid(i)), workers[i].launch.progress_file});
    progress::ProgressMonitor::Probe probe{[this](size_t i) { return children.running(i); },
                                           [this](size_t i) { return children.bytes_read(i); }};
    // The attempt's first step: for the observer, and the moment its standbys may start.
    progress::ProgressMonitor::FirstStepHandler first_step;
    if (observer || standbys)
      first_step = [this](const std::optional<report::FirstStep>& step) {
        if (observer) observer->first_step(step);
        look_for_standby_point();
        if (step) start_standbys();
      };
    monitor.start(
        std::move(monitored), std::move(probe), [this](progress::HangVerdict v) { on_hang(std::move(v)); },
        std::move(first_step));
  }

  // The verdict, then every live worker's stacks, and only then the stop.
  void on_hang(progress::HangVerdict verdict) {
    console::launcher_notice(verdict.summary);
    if (board) ++board->hang_verdicts;
    root_cause = verdict.culprit;
    hang = std::move(verdict);
    capture_then_stop();
  }

  // Every live worker's stacks (native, then Python via SIGABRT: a stopped worker is
  // continued for it, and given kPythonDump before SIGTERM could cut its faulthandler
  // short), then the stop: SIGTERM, and SIGCONT. From now on no exit is a root cause.
  void capture_then_stop() {
    console::launcher_notice(fmt::format("capturing the stacks of {} worker{} before stopping them", count_live(),
                                         count_live() == 1 ? "" : "s"));
    std::vector<StackTarget> targets;
    for (size_t i = 0; i < workers.size(); ++i)
      if (children.running(i)) {
        const worker::WorkerLaunch& l = workers[i].launch;
        targets.push_back({children.pid(i), l.rank, l.stacks_file, l.python});
      }
    const bool python = capture_stacks(targets, config.tool_path);
    stacks_captured = true;
    stopping = true;
    monitor.stop();
    capture_timer.expires_after(python ? kPythonDump : std::chrono::milliseconds(0));
    capture_timer.async_wait([this, id = attempt_id](const boost::system::error_code& ec) {
      if (ec || id != attempt_id) return;
      begin_stop(SIGTERM);
      children.signal_groups(SIGCONT);
    });
  }

  // The observer hears of the workers' start now (of their first step: the progress monitor).
  void observe_start() {
    if (!observer) return;
    observer->workers_started({Clock::now(), workers.size(), static_cast<size_t>(warm_started)});
  }

  // --- helpers -------------------------------------------------------------------------
  size_t count_live() const { return children.running_count(); }

  // Hands each worker to its local rank's standby where one is kept (its pid becomes the
  // worker's), else forks it; forks every cold worker first and only then waits for their
  // execs, so they exec in parallel. Worker i is child i of the set.
  void start(std::vector<worker::WorkerLaunch> launches) {
    workers.clear();
    workers.reserve(launches.size());
    warm_started = 0;
    std::vector<std::optional<os::StartedWorker>> started(launches.size());
    for (size_t i = 0; i < launches.size(); ++i) {
      Worker& w = workers.emplace_back();
      w.launch = std::move(launches[i]);
      w.streams = std::make_unique<WorkerStreams>(w.launch, console.board(), [this] { console.schedule_refresh(); });
      children.add(w.launch.spawn, w.streams->output());
      if (containment) containment->prepare_worker(w.launch.spawn);
      if (std::optional<pid_t> adopted = standbys ? standbys->adopt(w.launch) : std::nullopt) {
        if (containment) containment->adopt_standby(*adopted);
        children.started(i, *adopted);  // already under the watchdog (the pool registered it)
        w.warm = true;
        ++warm_started;
      } else {
        started[i] = os::start_worker(w.launch.spawn);
        children.started(i, started[i]->pid);
        watchdog.watch(started[i]->pid);
      }
    }
    for (size_t i = 0; i < started.size(); ++i) {
      if (!started[i]) continue;
      try {
        os::confirm_exec(*started[i]);
      } catch (...) {                      // not swallowed: confirm_exec reaped this worker, so nothing of it is
        watchdog.forget(children.pid(i));  // left to signal or wait for (its pid may be reused)
        children.abandon(i);
        throw;
      }
    }
    children.read_output();
  }

  // A worker could not be started: kill and reap what did start, forget them all.
  void abort_start() {
    children.kill_and_reap();
    for (size_t i = 0; i < children.size(); ++i)
      if (children.pid(i) > 0) watchdog.forget(children.pid(i));
    children.clear();
    workers.clear();
  }

  // Once the attempt's workers are up (they compete for the CPUs with a starting standby:
  // docs/warm-restarts.md), a standby per local rank for the next restart: at the attempt's
  // first step (its workers' own start is done) or kStandbyDelay after the start, whichever
  // comes first.
  void arm_standbys() {
    standbys_started = false;
    if (!standbys || !standbys->wanted()) return;
    standby_timer.expires_after(Supervisor::kStandbyDelay);
    standby_timer.async_wait([this, id = attempt_id](const boost::system::error_code& ec) {
      if (!ec && id == attempt_id) start_standbys();
    });
  }

  void start_standbys() {
    if (standbys_started || !attempt_running || !standbys || !standbys->wanted()) return;
    look_for_standby_point();
    standbys_started = true;
    standby_timer.cancel();
    std::vector<worker::WorkerLaunch> slots;
    for (const Worker& w : workers) slots.push_back(w.launch);
    standbys->fill(slots);
  }

  // A worker passed the script's standby point (the features of its progress record, fed or
  // not): the pool prepares its Python standbys from now on (docs/warm-restarts.md).
  void look_for_standby_point() {
    if (!standbys || standbys->using_standby_point()) return;
    for (const Worker& w : workers)
      if (!w.launch.progress_file.empty() &&
          (ddp::progress::read_record_features(w.launch.progress_file) & ddp::progress::kFeatureStandbyPoint))
        return standbys->use_standby_point();
  }

  report::AttemptResult finish() {
    report::AttemptResult result;
    if (stopping) children.signal_every_group(SIGKILL);  // stragglers in the groups
    for (size_t i = 0; i < workers.size(); ++i) {
      Worker& w = workers[i];
      watchdog.forget(children.pid(i));
      report::WorkerOutcome o = std::move(*w.outcome);
      if (stacks_captured) o.stacks_file = w.launch.stacks_file;
      const auto& tail = w.streams->stderr_tail();
      o.stderr_tail.assign(tail.begin(), tail.end());
      result.outcomes.push_back(std::move(o));
    }
    if (interrupt_signal != 0) {
      result.kind = report::AttemptResult::Kind::kInterrupted;
      result.signal = interrupt_signal;
      result.stop_note = stop_note;
    } else if (root_cause) {
      result.kind = report::AttemptResult::Kind::kFailed;
      result.root_cause = root_cause;
      if (hang) {
        result.outcomes[*root_cause].failure = hang->desync ? FailureKind::kDesync : FailureKind::kHang;
        result.outcomes[*root_cause].hang = hang->summary;
      }
    } else if (stop_reason) {
      result.kind = report::AttemptResult::Kind::kStopped;
      result.stop_reason = *stop_reason;
    }
    result.workers_started_warm = warm_started;
    children.clear();
    workers.clear();
    return result;
  }
};

Supervisor::Supervisor(asio::io_context& loop, os::Watchdog& watchdog, SupervisorConfig config, SupervisorLinks links)
    : impl_(std::make_unique<Impl>(loop, watchdog, std::move(config), links)) {}
Supervisor::~Supervisor() = default;

int Supervisor::interrupted_by() const { return impl_->interrupt_signal; }

const std::optional<std::string>& Supervisor::stop_note() const { return impl_->stop_note; }

int Supervisor::poll_signals() {
  impl_->io.poll();
  return impl_->interrupt_signal;
}

report::AttemptResult Supervisor::run_attempt(std::vector<worker::WorkerLaunch> workers, const AttemptCheck& check) {
  Impl& s = *impl_;
  s.io.poll();  // deliver a signal that arrived between attempts
  s.stopping = false;
  ++s.attempt_id;  // a completion of the previous attempt's timers, still queued, does nothing
  s.root_cause.reset();
  s.stop_reason.reset();
  s.hang.reset();
  s.stacks_captured = false;
  s.sweep_started = false;
  s.stop_deadline.reset();
  s.check = check;
  if (s.interrupt_signal != 0) {
    report::AttemptResult r;
    r.kind = report::AttemptResult::Kind::kInterrupted;
    r.signal = s.interrupt_signal;
    r.stop_note = s.stop_note;
    return r;
  }
  s.attempt_running = true;
  if (s.containment) s.containment->begin_attempt();
  try {
    s.start(std::move(workers));
  } catch (...) {  // not swallowed: kill and reap what did start, then rethrow
    s.abort_start();
    s.attempt_running = false;
    throw;
  }
  s.board_workers();
  s.observe_start();
  s.children.reap();  // a worker may have exited before the SIGCHLD wait was armed
  s.after_reap();
  if (s.standbys && !s.standbys->wanted()) s.standbys->clear();  // no restart left to take over
  if (s.standbys) s.standbys->reap();
  s.arm_standbys();
  s.schedule_tick();
  s.start_progress_monitor();
  s.on_wake = [&s] {
    if (s.attempt_running && s.check.tick) s.run_tick();
  };
  while (s.count_live() > 0 || s.children.output_open() || (s.sweep && s.sweep->running())) s.io.run_one();
  s.report_leftovers();
  if (s.containment) s.containment->end_attempt();
  s.on_wake = nullptr;
  s.tick_timer.cancel();
  s.console.cancel();
  s.capture_timer.cancel();
  s.standby_timer.cancel();
  s.monitor.end();  // a first step within a poll of the exits is still told
  s.attempt_running = false;
  return s.finish();
}

void Supervisor::wake() {
  asio::post(impl_->io, [s = impl_.get()] {
    if (s->on_wake) s->on_wake();
  });
}

int Supervisor::wait_until(std::chrono::milliseconds interval, const std::function<bool()>& done) {
  Impl& s = *impl_;
  const unsigned stops_before = s.stops_received;
  s.io.poll();
  bool finished = false;
  std::function<void()> arm = [&] {
    s.tick_timer.expires_after(interval);
    s.tick_timer.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      if (done()) finished = true;
      else arm();
    });
  };
  if (s.stops_received == stops_before && done()) return 0;
  arm();
  s.on_wake = [&] {
    if (!finished && done()) finished = true;
  };
  while (!finished && s.stops_received == stops_before) s.io.run_one();
  s.on_wake = nullptr;
  s.tick_timer.cancel();
  s.io.poll();  // let the cancelled handler run while `arm` and `finished` are alive
  return finished ? 0 : s.interrupt_signal;
}

}  // namespace ddp::launch::supervise
