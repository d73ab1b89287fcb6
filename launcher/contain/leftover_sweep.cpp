// LeftoverSweep's passes on a steady_timer: each reaps the adopted orphans, looks for the
// leftovers, signals the new ones, files the ended ones; the pause doubles from 5 ms to 100 ms.
#include "launcher/contain/leftover_sweep.hpp"

#include <signal.h>

#include <set>

namespace ddp::launch::contain {
namespace {
constexpr std::chrono::milliseconds kFirstPause{5}, kLongestPause{100};
}  // namespace

LeftoverSweep::LeftoverSweep(boost::asio::io_context& loop, const Containment& containment)
    : loop_(loop), containment_(containment), timer_(loop) {}

bool LeftoverSweep::start(Clock::time_point kill_at) {
  if (running_) return true;
  started_ = Clock::now();
  kill_at_ = std::max(kill_at, started_);
  killing_ = false;
  pause_ = kFirstPause;
  running_ = true;
  pass();
  return running_;
}

void LeftoverSweep::kill_now() {
  if (!running_ || killing_) return;
  kill_at_ = Clock::now();
  kill_all();
  schedule();  // sooner than the pass that was due
}

SweepReport LeftoverSweep::take_report() {
  SweepReport r = std::move(report_);
  report_ = {};
  return r;
}

void LeftoverSweep::pass() {
  containment_.reap_orphans();
  std::set<pid_t> seen;
  for (Leftover& l : containment_.leftovers()) {
    seen.insert(l.process.pid);
    if (tracked_.count(l.process.pid)) continue;
    std::optional<os::ProcessHandle> handle = os::ProcessHandle::open(l.process);
    if (!handle) continue;  // gone since
    if (killing_) {
      handle->signal(SIGKILL);
    } else {
      handle->signal(SIGTERM);
      handle->signal(SIGCONT);
    }
    tracked_.emplace(l.process.pid, Tracked{std::move(l), std::move(*handle), killing_});
  }
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    if (seen.count(it->first) && !it->second.handle.ended()) {
      ++it;
      continue;
    }
    (it->second.killed ? report_.killed : report_.stopped).push_back(std::move(it->second.leftover));
    it = tracked_.erase(it);
  }
  if (tracked_.empty()) return finish();
  const auto now = Clock::now();
  if (!killing_ && now >= kill_at_) kill_all();
  if (killing_ && now >= kill_at_ + kGiveUp) {
    for (auto& [pid, t] : tracked_) report_.remaining.push_back(std::move(t.leftover));
    tracked_.clear();
    return finish();
  }
  schedule();
}

void LeftoverSweep::kill_all() {
  killing_ = true;
  report_.kill_after_s = std::chrono::duration<double>(Clock::now() - started_).count();
  containment_.kill_attempt_cgroups();  // not cheap (an RCU grace period), but leftovers are rare
  for (auto& [pid, t] : tracked_) {
    t.handle.signal(SIGKILL);
    t.killed = true;
  }
  pause_ = kFirstPause;
}

void LeftoverSweep::schedule() {
  auto wait = pause_;
  if (!killing_)
    wait = std::min<std::chrono::milliseconds>(
        wait,
        std::chrono::duration_cast<std::chrono::milliseconds>(kill_at_ - Clock::now()) + std::chrono::milliseconds(1));
  pause_ = std::min(pause_ * 2, kLongestPause);
  timer_.expires_after(wait);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && running_) pass();
  });
}

void LeftoverSweep::finish() {
  running_ = false;
  timer_.cancel();
}

}  // namespace ddp::launch::contain
