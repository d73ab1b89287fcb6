// WorkerHealth: the two checks torchrun 2.15's agent makes of its workers besides their exits,
// on the Supervisor's loop (no thread, no poll of the pipe):
// - the file timers (TORCHELASTIC_ENABLE_FILE_TIMER=1): torch's FileTimerClient in a worker
//   writes acquire and release requests to the job's named pipe (os::FifoLines); at a timer's
//   deadline the launcher sends the signal the request named to the process that set it, and the
//   Supervisor hears a `watchdog` verdict for its worker. A request may only name a worker of
//   this attempt or a process under one (a worker may only time out itself and its own); others
//   and malformed lines are refused: the first named, the count told at the attempt's end.
// - the D state (TORCHELASTIC_UNINTERRUPTIBLE_STATE_TIMEOUT=S > 0): a worker whose /proc state
//   stays 'D' (uninterruptible sleep, in the kernel) for S seconds gives a `d_state` verdict,
//   once per attempt, naming where in the kernel it sleeps.
// Not thread-safe (the loop's thread).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/base/failure_kind.hpp"
#include "launcher/os/fifo_lines.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/supervise/worker_timers.hpp"

namespace ddp::launch::supervise {

struct HealthVerdict {
  size_t worker = 0;                          // the attempt's worker index
  FailureKind kind = FailureKind::kWatchdog;  // kWatchdog or kUninterruptible
  std::string line;                           // "rank 3: timer 'load_batch' expired after 60.0 s: SIGKILL"
};

class WorkerHealth {
 public:
  struct Worker {
    pid_t pid = 0;
    int rank = 0;
  };
  using VerdictHandler = std::function<void(const HealthVerdict&)>;

  // timer_pipe: the job's (null: no file timers); d_state_timeout_s <= 0: no D-state check.
  WorkerHealth(boost::asio::io_context& loop, os::FifoLines* timer_pipe, double d_state_timeout_s,
               report::EventLog* events);
  ~WorkerHealth();
  WorkerHealth(const WorkerHealth&) = delete;
  WorkerHealth& operator=(const WorkerHealth&) = delete;

  // The attempt's workers run: their requests are served and their states read from now on.
  void begin(std::vector<Worker> workers, VerdictHandler verdict);
  // Worker i has exited: its timers go, its state is no longer read.
  void exited(size_t i);
  // The attempt has ended: every timer goes, and what its workers left in the pipe.
  void end();

 private:
  void clear_attempt();
  void on_line(std::string_view line, bool too_long);
  void refuse(const std::string& why);
  std::optional<size_t> owner(pid_t pid);
  void arm_expiry();
  void expire();
  void arm_d_state_check();
  void check_d_state();

  os::FifoLines* pipe_;
  double d_state_timeout_s_;
  report::EventLog* events_;
  boost::asio::steady_timer expiry_timer_, d_state_timer_;
  WorkerTimers timers_;
  std::vector<Worker> workers_;
  std::vector<bool> exited_;
  std::map<pid_t, size_t> owners_;  // each worker's pid -> its index (a process under one: found in /proc)
  std::map<size_t, std::chrono::steady_clock::time_point> in_d_since_;
  VerdictHandler verdict_;
  bool running_ = false, d_state_reported_ = false;
  size_t requests_ = 0, refused_ = 0;
  unsigned generation_ = 0;  // a timer handler acts only on the attempt that armed it
};

}  // namespace ddp::launch::supervise
