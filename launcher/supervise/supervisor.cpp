#include "launcher/supervise/supervisor_impl.hpp"

namespace ddp::launch::supervise {

Supervisor::Impl::Impl(asio::io_context& loop, os::ChildRegistry& registry, os::Watchdog& dog, SupervisorConfig c,
                       StopSignals& stop_signals, SupervisorLinks l)
    : config(std::move(c)),
      io(loop),
      registry(registry),
      watchdog(dog),
      standbys(l.standbys),
      events(l.events),
      board(l.board),
      signals(stop_signals),
      containment(l.containment),
      children(io, registry,
               [this] {
                 this->registry.reap_orphans();  // a worker's orphan that ended: no one else waits for it
                 after_reap();
               }),
      tick_timer(io),
      capture_timer(io),
      standby_timer(io),
      give_up_timer(io),
      health(io, l.timer_pipe, config.d_state_timeout_s, l.events),
      monitor(io, {config.hang_timeout_s, config.straggler_threshold}, l.events, l.board),
      console(io),
      observer(l.observer) {
  if (containment) sweep.emplace(io, *containment);
  signals.listen({[this](int signo, bool first) { on_stop_signal(signo, first); },
                  [this](int signo) { on_forward_signal(signo); }});
}

Supervisor::Impl::~Impl() { signals.listen({}); }

void Supervisor::Impl::on_exit(size_t i, const os::ExitStatus& status) {
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
  o.stopped_by_launcher = stopping && !status.vanished &&
                          (status.signaled ? (status.signal == SIGTERM || status.signal == SIGKILL ||
                                              status.signal == signals.interrupted_by() ||
                                              (stacks_captured && w.launch.python && status.signal == SIGABRT))
                                           : status.code == 0 || signals.interrupted_by() != 0);
  o.failure = status.signaled ? FailureKind::kSignal : FailureKind::kCrash;
  health.exited(i);
  if (w.verdict && w.verdict->kind == FailureKind::kWatchdog && !status.success()) {
    o.failure = FailureKind::kWatchdog;
    o.verdict = w.verdict->line;
  }
  if (events) log_worker_exit(*events, o);
  if (board) mark_exit(o);
  w.outcome = std::move(o);
  if (status.success() || stopping || signals.interrupted_by() != 0) return;
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

void Supervisor::Impl::after_reap() {
  if (count_live() > 0) return;
  arm_drain();
  begin_sweep();
}

void Supervisor::Impl::begin_sweep() {
  if (!sweep || !attempt_running || workers.empty() || sweep_started) return;
  sweep_started = true;
  sweep->start(stop_deadline.value_or(std::chrono::steady_clock::now() + grace()));
}

void Supervisor::Impl::report_leftovers() {
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

void Supervisor::Impl::board_workers() {
  if (!board) return;
  std::vector<std::pair<int, int>> rows;
  for (const Worker& w : workers) rows.emplace_back(w.launch.rank, w.launch.local_rank);
  board->set_workers(rows);
}

void Supervisor::Impl::mark_exit(const report::WorkerOutcome& o) {
  report::RankStatus* row = board->find_rank(o.rank);
  if (!row) return;
  row->state = o.status.success()      ? report::WorkerState::kSucceeded
               : o.stopped_by_launcher ? report::WorkerState::kStopped
                                       : report::WorkerState::kFailed;
}

void Supervisor::Impl::observe_start() {
  if (!observer) return;
  observer->workers_started({Clock::now(), workers.size(), static_cast<size_t>(warm_started)});
}

void Supervisor::Impl::start(std::vector<worker::WorkerLaunch> launches) {
  workers.clear();
  workers.reserve(launches.size());
  warm_started = 0;
  std::vector<std::optional<os::StartedWorker>> started(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    Worker& w = workers.emplace_back();
    w.launch = std::move(launches[i]);
    w.streams = std::make_unique<WorkerStreams>(w.launch, console.board(), [this] { console.schedule_refresh(); });
    os::ChildEvents events = w.streams->output();
    events.exited = [this, i](const os::ExitStatus& status) { on_exit(i, status); };
    children.add(w.launch.spawn, std::move(events));
    if (containment) containment->prepare_worker(w.launch.spawn);
    if (std::optional<pid_t> adopted = standbys ? standbys->adopt(w.launch) : std::nullopt) {
      if (containment) containment->adopt_standby(*adopted);
      children.started(i, *adopted);  // already under the watchdog (the pool registered it)
      w.warm = true;
      ++warm_started;
    } else {
      started[i] = children.start(i, w.launch.spawn);
      watchdog.watch(started[i]->pid);
    }
  }
  for (size_t i = 0; i < started.size(); ++i) {
    if (!started[i]) continue;
    try {
      children.confirm(i, *started[i]);
    } catch (...) {                      // not swallowed: the set reaped and abandoned this worker, so nothing
      watchdog.forget(started[i]->pid);  // of it is left to signal or wait for (its pid may be reused)
      throw;
    }
  }
  children.read_output();
}

void Supervisor::Impl::abort_start() {
  children.kill_and_reap();
  for (size_t i = 0; i < children.size(); ++i)
    if (children.pid(i) > 0) watchdog.forget(children.pid(i));
  children.clear();
  workers.clear();
}

report::AttemptResult Supervisor::Impl::finish() {
  report::AttemptResult result;
  if (stopping) children.signal_every_group(SIGKILL);  // stragglers in the groups
  for (size_t i = 0; i < workers.size(); ++i) {
    Worker& w = workers[i];
    if (children.pid(i) > 0) watchdog.forget(children.pid(i));  // an unreaped worker's is forgotten already
    report::WorkerOutcome o = std::move(*w.outcome);
    if (o.unreaped) result.unreaped_ranks.push_back(o.rank);
    if (stacks_captured) o.stacks_file = w.launch.stacks_file;
    const auto& tail = w.streams->stderr_tail();
    o.stderr_tail.assign(tail.begin(), tail.end());
    result.outcomes.push_back(std::move(o));
  }
  if (signals.interrupted_by() != 0) {
    result.kind = report::AttemptResult::Kind::kInterrupted;
    result.signal = signals.interrupted_by();
    result.stop_note = signals.stop_note();
  } else if (root_cause) {
    result.kind = report::AttemptResult::Kind::kFailed;
    result.root_cause = root_cause;
    report::WorkerOutcome& root = result.outcomes[*root_cause];
    if (hang) {
      root.failure = hang->desync ? FailureKind::kDesync : FailureKind::kHang;
      root.verdict = hang->summary;
    } else if (const auto& v = workers[*root_cause].verdict; v && v->kind == FailureKind::kUninterruptible) {
      root.failure = v->kind;
      root.verdict = v->line;
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

Supervisor::Supervisor(asio::io_context& loop, os::ChildRegistry& registry, os::Watchdog& watchdog,
                       SupervisorConfig config, StopSignals& signals, SupervisorLinks links)
    : impl_(std::make_unique<Impl>(loop, registry, watchdog, std::move(config), signals, links)) {}
Supervisor::~Supervisor() = default;

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
  if (s.signals.interrupted_by() != 0) {
    report::AttemptResult r;
    r.kind = report::AttemptResult::Kind::kInterrupted;
    r.signal = s.signals.interrupted_by();
    r.stop_note = s.signals.stop_note();
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
  s.start_health();
  s.signals.on_wake([&s] {
    if (s.attempt_running && s.check.tick) s.run_tick();
  });
  while (s.count_live() > 0 || s.children.output_open() || (s.sweep && s.sweep->running())) s.io.run_one();
  s.report_leftovers();
  if (s.containment) s.containment->end_attempt();
  s.signals.on_wake(nullptr);
  s.tick_timer.cancel();
  s.console.cancel();
  s.capture_timer.cancel();
  s.standby_timer.cancel();
  s.give_up_timer.cancel();
  s.health.end();
  s.monitor.end();  // a first step within a poll of the exits is still told
  s.attempt_running = false;
  return s.finish();
}

}  // namespace ddp::launch::supervise
