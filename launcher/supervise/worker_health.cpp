#include "launcher/supervise/worker_health.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "launcher/base/clock.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/proc_state.hpp"
#include "launcher/os/process.hpp"

namespace ddp::launch::supervise {
namespace {

constexpr int kAncestorsLooked = 32;  // how far up a requesting pid's parents are followed
// Deadlines are wall-clock times (torch's time.time()): the wait is checked against the clock
// at least this often, so that a clock step moves them as it moves torch's.
constexpr double kWallClockRecheckS = 1.0;

}  // namespace

WorkerHealth::WorkerHealth(boost::asio::io_context& loop, os::FifoLines* timer_pipe, double d_state_timeout_s,
                           report::EventLog* events)
    : pipe_(timer_pipe),
      d_state_timeout_s_(d_state_timeout_s),
      events_(events),
      expiry_timer_(loop),
      d_state_timer_(loop) {}

WorkerHealth::~WorkerHealth() { end(); }

void WorkerHealth::begin(std::vector<Worker> workers, VerdictHandler verdict) {
  clear_attempt();  // what the new workers sent already stays in the pipe
  workers_ = std::move(workers);
  exited_.assign(workers_.size(), false);
  verdict_ = std::move(verdict);
  running_ = true;
  d_state_reported_ = false;
  requests_ = refused_ = 0;
  for (size_t i = 0; i < workers_.size(); ++i) owners_[workers_[i].pid] = i;
  if (pipe_) pipe_->listen([this](std::string_view line, bool too_long) { on_line(line, too_long); });
  if (d_state_timeout_s_ > 0) arm_d_state_check();
}

void WorkerHealth::exited(size_t i) {
  if (!running_ || i >= workers_.size()) return;
  exited_[i] = true;
  in_d_since_.erase(i);
  for (const auto& [pid, worker] : owners_)
    if (worker == i) timers_.forget(pid);
  arm_expiry();
}

void WorkerHealth::end() {
  if (running_ && refused_ > 1)
    console::launcher_notice(
        fmt::format("refused {} of the attempt's {} file timer requests (the first named above)", refused_, requests_));
  if (pipe_) {
    pipe_->listen(nullptr);
    pipe_->discard_unread();  // the ended attempt's last requests: not the next attempt's to refuse
  }
  clear_attempt();
}

void WorkerHealth::clear_attempt() {
  ++generation_;
  expiry_timer_.cancel();
  d_state_timer_.cancel();
  timers_.clear();
  owners_.clear();
  in_d_since_.clear();
  running_ = false;
}

void WorkerHealth::on_line(std::string_view line, bool too_long) {
  if (!running_) return;
  ++requests_;
  if (too_long) return refuse(fmt::format("a line longer than PIPE_BUF bytes ('{}...')", line));
  auto parsed = parse_timer_request(line);
  if (const std::string* why = std::get_if<std::string>(&parsed)) return refuse(*why);
  const TimerRequest& request = std::get<TimerRequest>(parsed);
  if (!owner(request.pid))
    return refuse(
        fmt::format("pid {} is neither a worker of this node nor one of their processes (a worker may only "
                    "time out itself)",
                    request.pid));
  if (!timers_.apply(request, unix_now()))
    return refuse(fmt::format("{} timers are live already", WorkerTimers::kMaxTimers));
  arm_expiry();
}

void WorkerHealth::refuse(const std::string& why) {
  if (refused_++ == 0)
    console::launcher_notice(
        fmt::format("refused a file timer request on {}: {} (further refusals this attempt are "
                    "only counted)",
                    pipe_->path(), why));
  if (events_ && refused_ == 1) events_->write("timer_refused", {{"why", why}});
}

std::optional<size_t> WorkerHealth::owner(pid_t pid) {
  if (auto it = owners_.find(pid); it != owners_.end())
    return exited_[it->second] ? std::nullopt : std::optional(it->second);
  pid_t at = pid;
  for (int up = 0; up < kAncestorsLooked && at > 1; ++up) {
    const std::optional<pid_t> parent = os::proc_parent(at);
    if (!parent) return std::nullopt;
    at = *parent;
    if (auto it = owners_.find(at); it != owners_.end())
      return exited_[it->second] ? std::nullopt : std::optional(it->second);
  }
  return std::nullopt;
}

void WorkerHealth::arm_expiry() {
  const std::optional<double> next = timers_.next_expiry();
  if (!next) return (void)expiry_timer_.cancel();
  const double wait_s = std::max(0.0, *next - unix_now());
  expiry_timer_.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(std::min(wait_s, kWallClockRecheckS))));
  expiry_timer_.async_wait([this, g = generation_](const boost::system::error_code& ec) {
    if (!ec && g == generation_) expire();
  });
}

void WorkerHealth::expire() {
  for (const ExpiredTimer& t : timers_.take_expired(unix_now())) {
    // Asked again: a worker's own process that has ended since (its pid free for anyone) is
    // no longer under the worker, and its timer goes unsent, as torch drops a dead pid's.
    const std::optional<size_t> owner_now = owner(t.pid);
    if (!owner_now) continue;
    const size_t i = *owner_now;
    const int rank = workers_[i].rank;
    const std::string who = t.pid == workers_[i].pid ? "" : fmt::format(" (its process {})", t.pid);
    const std::string line = fmt::format("rank {}{}: timer '{}' expired after {:.1f} s: {}", rank, who, t.scope,
                                         t.after_s, t.signal > 0 ? signal_name(t.signal) : "no signal named");
    console::launcher_notice(line + (t.signal > 0 ? fmt::format(" sent to pid {}", t.pid) : ""));
    if (events_)
      events_->write("timer_expired", {{"rank", rank},
                                       {"pid", static_cast<long>(t.pid)},
                                       {"scope", t.scope},
                                       {"after_s", t.after_s},
                                       {"signal", t.signal > 0 ? signal_name(t.signal) : "none"}});
    if (t.signal <= 0) continue;
    os::signal_process(t.pid, t.signal);
    if (verdict_) verdict_({i, FailureKind::kWatchdog, line});
  }
  arm_expiry();
}

void WorkerHealth::arm_d_state_check() {
  const double every_s = std::clamp(d_state_timeout_s_ / 5, 0.05, 1.0);
  d_state_timer_.expires_after(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(every_s)));
  d_state_timer_.async_wait([this, g = generation_](const boost::system::error_code& ec) {
    if (ec || g != generation_ || d_state_reported_) return;
    check_d_state();
    arm_d_state_check();
  });
}

void WorkerHealth::check_d_state() {
  const auto now = std::chrono::steady_clock::now();
  for (size_t i = 0; i < workers_.size() && !d_state_reported_; ++i) {
    if (exited_[i] || os::proc_state(workers_[i].pid) != 'D') {
      in_d_since_.erase(i);
      continue;
    }
    const auto since = in_d_since_.emplace(i, now).first->second;
    const double dwell_s = std::chrono::duration<double>(now - since).count();
    if (dwell_s < d_state_timeout_s_) continue;
    d_state_reported_ = true;
    const std::string stack = os::kernel_stack(workers_[i].pid);
    const std::string line = fmt::format(
        "rank {} (pid {}) in uninterruptible sleep (state D) for {:.1f} s (TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT="
        "{:g}); in the kernel at {}",
        workers_[i].rank, workers_[i].pid, dwell_s, d_state_timeout_s_, stack.empty() ? "<unreadable>" : stack);
    if (events_)
      events_->write("d_state", {{"rank", workers_[i].rank},
                                 {"pid", static_cast<long>(workers_[i].pid)},
                                 {"dwell_s", dwell_s},
                                 {"kernel_stack", stack}});
    if (verdict_) verdict_({i, FailureKind::kUninterruptible, line});
  }
}

}  // namespace ddp::launch::supervise
