#include "launcher/supervise/supervisor_impl.hpp"

namespace ddp::launch::supervise {

void Supervisor::Impl::on_forward_signal(int signo) {
  console::launcher_notice(fmt::format("forwarding {} to the workers", signal_name(signo)));
  children.signal_running(signo);
}

void Supervisor::Impl::on_stop_signal(int signo, bool first) {
  if (!first) {
    console::launcher_notice(fmt::format("second {}: killing the workers now", signal_name(signo)));
    children.kill();
    arm_give_up();
    if (sweep) sweep->kill_now();
    return;
  }
  if (!attempt_running) return;
  const std::optional<std::string>& note = signals.stop_note();
  console::launcher_notice(
      fmt::format("received {}{}: forwarding it to the workers, SIGKILL after {} s (send it "
                  "again to kill them now)",
                  signal_name(signo), note ? " (" + *note + ")" : "", config.shutdown_timeout_s));
  begin_stop(signo);
}

os::ChildSet::Duration Supervisor::Impl::grace() const {
  return std::chrono::duration_cast<os::ChildSet::Duration>(std::chrono::duration<double>(config.shutdown_timeout_s));
}

void Supervisor::Impl::arm_drain() {
  if (!attempt_running || workers.empty()) return;
  children.drain_after(kDrain);  // once per attempt; a lingering grandchild holds a pipe: stop waiting
}

void Supervisor::Impl::begin_stop(int signo) {
  stopping = true;
  monitor.stop();
  stop_deadline = std::chrono::steady_clock::now() + grace();
  children.begin_stop(signo, grace(), [this](size_t live) {
    console::launcher_notice(fmt::format("{} worker{} still running {} s after SIGTERM: sending SIGKILL", live,
                                         live == 1 ? "" : "s", config.shutdown_timeout_s));
    arm_give_up();
  });
}

}  // namespace ddp::launch::supervise
