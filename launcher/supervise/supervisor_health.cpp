#include "launcher/os/proc_state.hpp"
#include "launcher/supervise/supervisor_impl.hpp"

namespace ddp::launch::supervise {

void Supervisor::Impl::start_health() {
  std::vector<WorkerHealth::Worker> watched;
  for (size_t i = 0; i < workers.size(); ++i) watched.push_back({children.pid(i), workers[i].launch.rank});
  health.begin(std::move(watched), [this](const HealthVerdict& v) { on_health(v); });
}

void Supervisor::Impl::on_health(const HealthVerdict& v) {
  Worker& w = workers.at(v.worker);
  if (v.kind == FailureKind::kWatchdog) {  // the signal is sent: its exit tells the rest
    if (!w.verdict) w.verdict = v;
    return;
  }
  if (stopping || signals.interrupted_by() != 0 || !children.running(v.worker)) return;
  w.verdict = v;
  root_cause = v.worker;
  const size_t live = count_live();
  console::launcher_notice(fmt::format("{}; stopping the {} worker{} (SIGTERM, SIGKILL after {} s)", v.line, live,
                                       live == 1 ? "" : "s", config.shutdown_timeout_s));
  begin_stop(SIGTERM);
}

void Supervisor::Impl::arm_give_up() {
  give_up_timer.expires_after(Supervisor::kUnkillableGiveUp);
  give_up_timer.async_wait([this, id = attempt_id](const boost::system::error_code& ec) {
    if (!ec && id == attempt_id) give_up_unkillable();
  });
}

void Supervisor::Impl::give_up_unkillable() {
  children.reap();  // an exit not yet heard of is not a leftover
  for (size_t i = 0; i < workers.size(); ++i) {
    if (!children.running(i)) continue;
    Worker& w = workers[i];
    const pid_t pid = children.pid(i);
    const std::optional<char> state = os::proc_state(pid);
    const std::string stack = os::kernel_stack(pid);
    console::launcher_notice(fmt::format(
        "rank {} (pid {}) is still there {} s after SIGKILL (state {}{}): it cannot be killed while it sleeps in the "
        "kernel; ddp-launch stops waiting for it and will not restart on this node (the process still holds what it "
        "held). End it once the kernel lets it go (a hung file system, driver or device), then start the job again",
        w.launch.rank, pid, Supervisor::kUnkillableGiveUp.count(), state ? std::string(1, *state) : "unknown",
        stack.empty() ? "" : ", at " + stack));
    if (events)
      events->write("leftover", {{"pid", static_cast<long>(pid)},
                                 {"command", w.launch.spawn.argv.empty() ? "" : w.launch.spawn.argv[0]},
                                 {"rank", w.launch.rank},
                                 {"ended_by", "none"},
                                 {"kernel_stack", stack}});
    report::WorkerOutcome o;
    o.rank = w.launch.rank;
    o.local_rank = w.launch.local_rank;
    o.pid = pid;
    o.status = os::ExitStatus::unknown();
    o.time = Clock::now();
    o.error_file = w.launch.error_file;
    o.error = report::read_error_file(w.launch.error_file);
    o.stopped_by_launcher = true;
    o.unreaped = true;
    if (board) mark_exit(o);
    w.outcome = std::move(o);
    watchdog.forget(pid);
    registry.give_up(pid);  // reaped as an orphan if the kernel ever lets it end
    if (containment) containment->give_up(pid);
    children.abandon(i);
  }
  after_reap();
}

}  // namespace ddp::launch::supervise
