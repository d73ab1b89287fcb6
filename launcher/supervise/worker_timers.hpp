// The workers' file timers (torch.distributed.elastic.timer's FileTimerClient, enabled by
// TORCHELASTIC_ENABLE_FILE_TIMER=1): parsing one request line as torch 2.15 writes it, and the
// table of live timers, keyed by (pid, scope id) as torch's FileTimerServer keys them. A request
// with a negative expiration time releases its scope; a later request for the same key replaces
// it. Expiry follows torch: per process, the earliest expired timer that names a signal (> 0) is
// the one acted on and every timer of that process goes; expired timers that name no signal are
// reported once and dropped (torch logs them again every 0.1 s). Bounded: at most kMaxTimers live
// timers, a scope id of at most kMaxScope bytes. Pure; not thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ddp::launch::supervise {

// {"version": 1, "pid": P, "scope_id": "S", "expiration_time": T, "signal": N}
struct TimerRequest {
  pid_t pid = 0;
  std::string scope;
  double expiration_unix_s = 0;  // time.time() of its deadline; < 0: release the scope
  int signal = 0;                // <= 0: report the expiry, send nothing
  bool release() const { return expiration_unix_s < 0; }
};

inline constexpr size_t kMaxScope = 512;

// The request in one line, or why it is none ("not JSON", "no integer 'pid'", ...).
std::variant<TimerRequest, std::string> parse_timer_request(std::string_view line);

struct ExpiredTimer {
  pid_t pid = 0;
  std::string scope;
  int signal = 0;      // what to send (0: nothing)
  double after_s = 0;  // its deadline less the time its request came
};

class WorkerTimers {
 public:
  static constexpr size_t kMaxTimers = 100000;

  // The request, received at now_unix_s. false: refused, the table holds kMaxTimers already.
  bool apply(const TimerRequest& request, double now_unix_s);
  // The earliest deadline of a live timer (unix seconds).
  std::optional<double> next_expiry() const;
  // The timers whose deadline is at or before now_unix_s, taken out of the table (see above).
  std::vector<ExpiredTimer> take_expired(double now_unix_s);
  // Every timer of pid goes (it exited).
  void forget(pid_t pid);
  void clear();
  size_t size() const { return timers_.size(); }

 private:
  using Key = std::pair<pid_t, std::string>;
  struct Timer {
    double expiration = 0;
    double received = 0;
    int signal = 0;
  };
  void erase(std::map<Key, Timer>::iterator it);

  std::map<Key, Timer> timers_;
  std::set<std::pair<double, Key>> by_deadline_;
};

}  // namespace ddp::launch::supervise
