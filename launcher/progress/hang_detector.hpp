// Hang detection from the progress sampler's samples: the progress monitor calls observe()
// on each tick; when no live rank has progressed for the limit (none paused), judge() names
// the rank behind and the collective, or a desync. A job where no worker feeds its record is
// judged by what the launcher sees instead: output on the workers' pipes and CPU time of
// their process groups (signs of life). Pure (time is a parameter); single-threaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/progress/progress_sampler.hpp"

namespace ddp::launch::progress {

// What the launcher knows of one worker at a tick.
struct RankProgress {
  int rank = 0;
  long pid = 0;
  std::optional<ddp::progress::Record> record;  // nullopt: never fed (or unreadable)
  double idle_s = 0;                            // seconds since its record last changed
  bool paused = false;                          // inside pause(), before its deadline
  double silent_s = 0;                          // seconds since its output or CPU time last changed
};

struct HangVerdict {
  bool desync = false;
  size_t culprit = 0;   // index into the RankProgress list (HangDetector: into the samples)
  std::string summary;  // "hang: no progress for 30 s; rank 1 (pid 4711) ..."
};

// Pure: a verdict when every watched rank has been idle for timeout_s, none paused, and at
// least one has ever fed its record; when none has fed, when every rank has been silent
// (no output, no CPU time) for timeout_s (the one silent longest is named); else nullopt.
std::optional<HangVerdict> judge(const std::vector<RankProgress>& ranks, double timeout_s);

// --hang-timeout auto: the limit follows the step times (the sampler's). Before any rank
// completed two observed steps: kBeforeFirstStepS (start-up, data loading, compilation);
// after: max(kFloorS, kFactor x the slowest rank's step time).
struct AutoHangLimit {
  static constexpr double kBeforeFirstStepS = 600;
  static constexpr double kFloorS = 120;
  static constexpr double kFactor = 10;
};
// Pure: the auto limit for each rank's recent step time (nullopt: none measured yet).
double auto_hang_limit(const std::vector<std::optional<double>>& recent_step_s);

// Tracks the signs of life of workers that feed no record, and judges each tick.
class HangDetector {
 public:
  // timeout_s < 0: auto (AutoHangLimit). start_s: when the workers started.
  HangDetector(double timeout_s, size_t workers, double start_s);
  // What the launcher itself sees of a worker: any change is a sign of life.
  struct SignsOfLife {
    uint64_t output_bytes = 0;  // read from its pipes so far
    uint64_t cpu_ticks = 0;     // of its process group (os/cpu_time)
    bool operator!=(const SignsOfLife& o) const { return output_bytes != o.output_bytes || cpu_ticks != o.cpu_ticks; }
  };
  // Whether some worker has not fed its record yet: only then observe() needs `signs`.
  static bool wants_signs_of_life(const ProgressSampler& sampler);
  // One tick: the sampler after its observe() at now_s; `signs[i]` (may be empty when
  // !wants_signs_of_life()): what the launcher sees of worker i. A verdict once judge()
  // finds one (its culprit indexes the samples).
  std::optional<HangVerdict> observe(double now_s, const ProgressSampler& sampler,
                                     const std::vector<SignsOfLife>& signs = {});
  // The limit now: timeout_s, or the auto limit from the samples' step times.
  double limit(const ProgressSampler& sampler) const;

 private:
  double timeout_s_;
  std::vector<SignsOfLife> last_signs_;
  std::vector<double> last_sign_s_;  // when its signs of life last changed
};

}  // namespace ddp::launch::progress
