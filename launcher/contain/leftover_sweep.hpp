// LeftoverSweep: ends an attempt's leftovers (containment.hpp) once its workers are gone, on
// the launcher's Asio loop: SIGTERM (and SIGCONT, for a stopped one) to each, SIGKILL to what
// still runs at the stop's deadline (the attempt's cgroups as a whole, and each process by its
// pidfd), then the check that none remains. Each pass looks again, so a process a leftover
// starts meanwhile is found and ended too. Not thread-safe (the loop's thread); never blocks.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/contain/containment.hpp"
#include "launcher/os/process_handle.hpp"

namespace ddp::launch::contain {

// What a sweep ended, and how.
struct SweepReport {
  std::vector<Leftover> stopped;    // gone after SIGTERM
  std::vector<Leftover> killed;     // gone only after SIGKILL
  std::vector<Leftover> remaining;  // still there kGiveUp after SIGKILL (uninterruptible sleep)
  double kill_after_s = 0;          // how long after the sweep's SIGTERM the SIGKILL went
  bool empty() const { return stopped.empty() && killed.empty() && remaining.empty(); }
};

class LeftoverSweep {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::seconds kGiveUp{10};

  LeftoverSweep(boost::asio::io_context& loop, const Containment& containment);
  LeftoverSweep(const LeftoverSweep&) = delete;
  LeftoverSweep& operator=(const LeftoverSweep&) = delete;

  // Looks for leftovers now; if there are any, begins their end (SIGKILL at kill_at) and
  // runs until none remains. Returns whether it runs (false: there was nothing to end).
  bool start(Clock::time_point kill_at);
  // A second stop signal: SIGKILL now.
  void kill_now();
  bool running() const { return running_; }
  // The report of the sweep that ended; the sweep is ready to start again.
  SweepReport take_report();

 private:
  struct Tracked {
    Leftover leftover;
    os::ProcessHandle handle;
    bool killed = false;
  };
  void pass();
  void schedule();
  void kill_all();
  void finish();

  boost::asio::io_context& loop_;
  const Containment& containment_;
  boost::asio::steady_timer timer_;
  std::map<pid_t, Tracked> tracked_;  // running when last seen
  SweepReport report_;
  Clock::time_point started_, kill_at_;
  std::chrono::milliseconds pause_{0};
  bool running_ = false;
  bool killing_ = false;
};

}  // namespace ddp::launch::contain
