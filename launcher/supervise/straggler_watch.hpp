// Straggler detection from the workers' progress records (contract/progress_record.hpp):
// the Supervisor's hang tick calls observe() with every worker's record; a rank whose step
// time over the last kWindowS seconds is at least `threshold` times the job median is
// named once per attempt. Reporting only: nothing is stopped. Pure (time is a parameter).
// A legitimate pause (progress::Record::paused) anywhere in the window judges nobody: the
// paused rank's long step and the others' waiting for it say nothing about their pace.
#pragma once

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "contract/progress_record.hpp"

namespace ddp::launch {

class StragglerWatch {
 public:
  static constexpr double kWindowS = 20;      // step times are measured over this window
  static constexpr double kMinSpanS = 10;     // a rank is judged once its samples span this
  static constexpr unsigned kMinSteps = 3;    // ... and it completed this many steps in them
  static constexpr unsigned kMinBusy = 10;    // samples outside a collective before flagging
  static constexpr double kStallS = 5;        // no step for max(this, 3 step times): stalled

  struct Rank {
    int rank = 0;
    long pid = 0;
  };
  // threshold > 0 (--straggler-threshold; 0 means no StragglerWatch at all).
  StragglerWatch(std::vector<Rank> ranks, double threshold);

  struct Flag {
    int rank = 0;
    long pid = 0;
    double step_s = 0;    // its step time
    double median_s = 0;  // the job median
    std::string notice;   // "straggler: rank 1 (pid 4712) takes ..."
  };
  // One sample per rank at now_s (any monotonic clock, seconds); records[i] is rank i's
  // record (nullopt: never fed or exited). Returns each rank newly flagged.
  std::vector<Flag> observe(double now_s, const std::vector<std::optional<progress::Record>>& records);

  // A rank's own step time over the window in seconds (nullopt: not enough samples yet, or
  // stalled: a rank that stopped stepping is the hang watch's business, not a straggler):
  // the time per completed step, scaled by the share of samples where it was not waiting
  // in a collective (in a synchronous job every rank steps at the slowest one's pace, but
  // only the slow one is rarely seen waiting).
  std::optional<double> step_time(size_t i) const;

 private:
  struct Sample {
    double t;
    double t_step;  // when this rank's step last changed (observer's clock)
    uint64_t step;
    uint64_t step_time_ns;
    bool waiting;  // in a collective (entered, not completed)
  };
  std::vector<Rank> ranks_;
  double threshold_;
  std::vector<std::deque<Sample>> samples_;
  std::vector<bool> flagged_;
  std::optional<double> last_pause_s_;  // when a rank was last seen in a pause
};

}  // namespace ddp::launch
