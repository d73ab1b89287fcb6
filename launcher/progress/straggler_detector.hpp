// Straggler detection from the progress sampler's samples: a rank whose own step time is at
// least `threshold` times the job median is named once per attempt. Reporting only:
// nothing is stopped. Pure (the samples carry the time); single-threaded.
// A legitimate pause (ddp::progress::Record::paused) anywhere in the window judges nobody: the
// paused rank's long step and the others' waiting for it say nothing about their pace.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/progress/progress_sampler.hpp"

namespace ddp::launch::progress {

class StragglerDetector {
 public:
  static constexpr double kMinSpanS = 10;   // a rank is judged once its samples span this
  static constexpr unsigned kMinSteps = 3;  // ... and its step time covers this many steps
  static constexpr unsigned kMinBusy = 10;  // samples outside a collective before flagging
  static constexpr double kStallS = 5;      // no step for max(this, 3 step times): stalled

  // threshold > 0 (--straggler-threshold; 0 means no StragglerDetector at all).
  explicit StragglerDetector(double threshold);

  struct Flag {
    int rank = 0;
    long pid = 0;
    double step_s = 0;    // its own step time
    double median_s = 0;  // the job median
    std::string notice;   // "straggler: rank 1 (pid 4712) takes ..."
  };
  // One tick: the sampler after its observe() at now_s. Returns each rank newly flagged.
  std::vector<Flag> observe(double now_s, const ProgressSampler& sampler);

  // A rank's own step time (nullopt: not enough samples yet, or stalled: a rank that
  // stopped stepping is the hang detector's business, not a straggler): its step time
  // scaled by the share of samples where it was not waiting in a collective (in a
  // synchronous job every rank steps at the slowest one's pace, but only the slow one is
  // rarely seen waiting).
  static std::optional<double> own_step_time(const RankSample& s);

 private:
  double threshold_;
  std::vector<bool> flagged_;
};

}  // namespace ddp::launch::progress
