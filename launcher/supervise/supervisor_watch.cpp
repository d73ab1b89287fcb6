#include "launcher/supervise/supervisor_impl.hpp"

namespace ddp::launch::supervise {

void Supervisor::Impl::schedule_tick() {
  if (check.interval.count() <= 0 || !check.tick) return;
  tick_timer.expires_after(check.interval);
  tick_timer.async_wait([this](const boost::system::error_code& ec) {
    if (ec || !attempt_running) return;
    run_tick();
    schedule_tick();
  });
}

void Supervisor::Impl::run_tick() {
  std::optional<std::string> reason = check.tick();
  if (reason && !stopping && signals.interrupted_by() == 0 && count_live() > 0) {
    stop_reason = reason;
    console::launcher_notice(fmt::format("{}; stopping the {} local worker{} (SIGTERM, SIGKILL after {} s)", *reason,
                                         count_live(), count_live() == 1 ? "" : "s", config.shutdown_timeout_s));
    if (check.capture_stacks && check.capture_stacks()) capture_then_stop();  // a hang elsewhere
    else begin_stop(SIGTERM);
  }
}

void Supervisor::Impl::start_progress_monitor() {
  std::vector<progress::ProgressMonitor::Worker> monitored;
  for (size_t i = 0; i < workers.size(); ++i)
    monitored.push_back({workers[i].launch.rank, static_cast<long>(children.pid(i)), workers[i].launch.progress_file});
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

void Supervisor::Impl::on_hang(progress::HangVerdict verdict) {
  console::launcher_notice(verdict.summary);
  if (board) ++board->hang_verdicts;
  root_cause = verdict.culprit;
  hang = std::move(verdict);
  capture_then_stop();
}

void Supervisor::Impl::capture_then_stop() {
  console::launcher_notice(fmt::format("capturing the stacks of {} worker{} before stopping them", count_live(),
                                       count_live() == 1 ? "" : "s"));
  std::vector<StackTarget> targets;
  for (size_t i = 0; i < workers.size(); ++i)
    if (children.running(i)) {
      const worker::WorkerLaunch& l = workers[i].launch;
      targets.push_back({children.pid(i), l.rank, l.stacks_file, l.python});
    }
  const bool python = capture_stacks(registry, targets, config.tool_path);
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

void Supervisor::Impl::arm_standbys() {
  standbys_started = false;
  if (!standbys || !standbys->wanted()) return;
  standby_timer.expires_after(Supervisor::kStandbyDelay);
  standby_timer.async_wait([this, id = attempt_id](const boost::system::error_code& ec) {
    if (!ec && id == attempt_id) start_standbys();
  });
}

void Supervisor::Impl::start_standbys() {
  if (standbys_started || !attempt_running || !standbys || !standbys->wanted()) return;
  look_for_standby_point();
  standbys_started = true;
  standby_timer.cancel();
  std::vector<worker::WorkerLaunch> slots;
  for (const Worker& w : workers) slots.push_back(w.launch);
  standbys->fill(slots);
}

void Supervisor::Impl::look_for_standby_point() {
  if (!standbys || standbys->using_standby_point()) return;
  for (const Worker& w : workers)
    if (!w.launch.progress_file.empty() &&
        (ddp::progress::read_record_features(w.launch.progress_file) & ddp::progress::kFeatureStandbyPoint))
      return standbys->use_standby_point();
}

}  // namespace ddp::launch::supervise
