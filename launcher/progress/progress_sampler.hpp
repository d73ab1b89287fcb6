// The progress sampler: one sample of every worker's progress record per tick
// (contract/progress_record.hpp), and what follows from the series — when each rank last
// progressed, whether it is paused, its step time. The one place that interprets records
// over time: the hang and straggler detectors, and any later consumer, read its samples.
// Pure (the caller reads the records and passes the time); single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "contract/progress_record.hpp"

namespace ddp::launch::progress {

// One rank at the latest tick. Times are seconds of the clock passed to observe().
struct RankSample {
  int rank = 0;
  long pid = 0;
  bool live = false;                            // the worker runs
  std::optional<ddp::progress::Record> record;  // this tick's (nullopt: not fed yet, unreadable or exited)
  bool ever_fed = false;                        // its record was initialised at some tick
  double idle_s = 0;                            // since its record last changed (any write)
  bool paused = false;                          // inside pause(), before its deadline
  // Its step time: the worker's own time per completed step over the step changes seen in
  // the last kWindowS seconds, or over the last kRecentSteps changes when that reaches
  // further back (slow steps); nullopt until two different steps were seen.
  std::optional<double> step_s;
  uint64_t steps_measured = 0;  // the steps step_s is measured over
  double since_step_s = 0;      // since its step count last changed
  // The samples of the last kWindowS seconds (at least the last two):
  double window_s = 0;        // how long they span
  size_t window_samples = 0;  // how many there are ...
  size_t busy_samples = 0;    // ... and of those, outside a collective
};

class ProgressSampler {
 public:
  static constexpr double kWindowS = 20;
  static constexpr size_t kRecentSteps = 8;

  struct Rank {
    int rank = 0;
    long pid = 0;
  };
  // start_s: when the workers started (a rank that never writes has been idle since then).
  ProgressSampler(std::vector<Rank> ranks, double start_s);

  // One tick at now_s (CLOCK_MONOTONIC seconds: the clock of the records' own times).
  // records[i]: worker i's record as read now (nullopt: none); live[i]: worker i runs (a
  // worker that exited has no record). Returns the samples, one per rank, in rank order.
  const std::vector<RankSample>& observe(double now_s, const std::vector<std::optional<ddp::progress::Record>>& records,
                                         const std::vector<bool>& live);
  const std::vector<RankSample>& samples() const { return samples_; }
  // When some rank was last seen paused (nullopt: never in this attempt).
  std::optional<double> last_pause_s() const { return last_pause_s_; }

 private:
  struct Tick {  // one sample, for the window's span and waiting share
    double t;
    bool waiting;  // in a collective (entered, not completed)
  };
  struct StepChange {  // a tick that saw a new step count
    double t;
    uint64_t step;
    uint64_t step_time_ns;  // when the worker completed it (its clock)
  };
  void add(size_t i, double now_s, const ddp::progress::Record& r);
  void summarise(size_t i, double now_s);

  std::vector<RankSample> samples_;
  std::vector<std::deque<Tick>> ticks_;
  std::vector<std::deque<StepChange>> changes_;
  std::vector<uint64_t> last_updates_;
  std::vector<double> last_change_s_;
  std::optional<double> last_pause_s_;
};

}  // namespace ddp::launch::progress
