// Hang detection from the workers' progress records (contract/progress_record.hpp): the
// Supervisor calls observe() on its hang tick; when no watched rank has progressed for
// the limit (none paused), judge() names the rank behind and the collective, or a desync.
// A job where no worker feeds its record is watched by what the launcher sees instead:
// output on the workers' pipes and CPU time of their process groups (signs of life).
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "contract/progress_record.hpp"

namespace ddp::launch {

// What the launcher knows of one worker at a tick.
struct RankProgress {
  int rank = 0;
  long pid = 0;
  std::optional<progress::Record> record;  // nullopt: never fed (or unreadable)
  double idle_s = 0;                       // seconds since its record last changed
  bool paused = false;                     // inside pause(), before its deadline
  double silent_s = 0;                     // seconds since its output or CPU time last changed
};

struct HangVerdict {
  bool desync = false;
  size_t culprit = 0;   // index into the RankProgress list
  std::string summary;  // "hang: no progress for 30 s; rank 1 (pid 4711) ..."
};

// Pure: a verdict when every watched rank has been idle for timeout_s, none paused, and at
// least one has ever fed its record; when none has fed, when every rank has been silent
// (no output, no CPU time) for timeout_s (the one silent longest is named); else nullopt.
std::optional<HangVerdict> judge(const std::vector<RankProgress>& ranks, double timeout_s);

// --hang-timeout auto: the limit follows the step times. Before any rank completed two
// observed steps: kBeforeFirstStepS (start-up, data loading, compilation); after:
// max(kFloorS, kFactor x the slowest rank's recent step time).
struct AutoHangLimit {
  static constexpr double kBeforeFirstStepS = 600;
  static constexpr double kFloorS = 120;
  static constexpr double kFactor = 10;
  static constexpr size_t kRecentSteps = 8;  // a rank's recent step time: the mean of these
};
// Pure: the auto limit for each rank's recent step time (nullopt: none measured yet).
double auto_hang_limit(const std::vector<std::optional<double>>& recent_step_s);

// Reads a record file (nullopt if absent, short, or not yet initialised by the worker).
std::optional<progress::Record> read_progress_record(const std::string& path);
// Creates (or empties) a zeroed record file for a worker to map. Throws LaunchError 125.
void create_progress_file(const std::string& path);

// Tracks when each worker's record last changed, in the launcher's own clock.
class HangWatch {
 public:
  struct Worker {
    int rank = 0;
    long pid = 0;
    std::string progress_file;
  };
  // timeout_s < 0: auto (AutoHangLimit).
  HangWatch(std::vector<Worker> workers, double timeout_s);
  // What the launcher itself sees of a worker: any change is a sign of life.
  struct SignsOfLife {
    uint64_t output_bytes = 0;  // read from its pipes so far
    uint64_t cpu_ticks = 0;     // of its process group (os/cpu_time)
    bool operator!=(const SignsOfLife& o) const { return output_bytes != o.output_bytes || cpu_ticks != o.cpu_ticks; }
  };
  // Whether some worker has not fed its record yet: only then observe() needs `signs`.
  bool wants_signs_of_life() const;
  // Reads every record; returns a verdict once judge() finds one. `live[i]`: worker i runs;
  // `signs[i]` (may be empty when !wants_signs_of_life()): what the launcher sees of it.
  std::optional<HangVerdict> observe(const std::vector<bool>& live, const std::vector<SignsOfLife>& signs = {});

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<Worker> workers_;
  double timeout_s_;
  std::vector<uint64_t> last_updates_;
  std::vector<Clock::time_point> last_change_;
  std::vector<bool> fed_;                              // its record was ever initialised
  std::vector<SignsOfLife> last_signs_;
  std::vector<Clock::time_point> last_sign_;           // when its signs of life last changed
  std::optional<Clock::time_point> last_pause_;        // the last tick that saw a rank paused
  std::vector<uint64_t> last_step_, last_step_ns_;     // auto: the last step seen, and when
  std::vector<std::vector<double>> recent_step_s_;     // auto: its last step intervals

  void note_steps(size_t i, const progress::Record& r);
  double limit() const;
};

}  // namespace ddp::launch
