// The first-step watch: a consumer of the progress monitor's reads (progress_monitor.hpp)
// that, for the attempt observer, finds the earliest completed step of any rank: told once
// per attempt, at the first read that shows one; a group that initialised no record within
// kNoRecord (a program that feeds none) is told once as "none". The monitor reads every
// kPoll while this watch waits. Pure: no I/O, no clock of its own; single-threaded.
#pragma once

#include <chrono>
#include <optional>
#include <vector>

#include "contract/progress_record.hpp"
#include "launcher/report/attempt_observer.hpp"

namespace ddp::launch::progress {

class FirstStepWatch {
 public:
  static constexpr std::chrono::milliseconds kPoll{50};
  // Generous: a Python worker's record is initialised only after its imports (torch: seconds).
  static constexpr std::chrono::seconds kNoRecord{30};

  enum class Seen { kNothingYet, kStep, kNoRecord };
  struct Answer {
    Seen seen = Seen::kNothingYet;
    report::FirstStep step;  // when kStep
  };

  // ranks: each worker's global rank, in the order of the records observe() gets.
  FirstStepWatch(std::vector<int> ranks, std::chrono::steady_clock::time_point started);

  // One read of every worker's record (nullopt: none, or unreadable), taken at `now`.
  // end_of_attempt: the last look (no kNoRecord answer: nothing found is nothing told).
  Answer observe(const std::vector<std::optional<ddp::progress::Record>>& records,
                 std::chrono::steady_clock::time_point now, bool end_of_attempt = false);

 private:
  std::vector<int> ranks_;
  std::chrono::steady_clock::time_point started_;
  bool fed_ = false;  // some record was initialised
};

}  // namespace ddp::launch::progress
