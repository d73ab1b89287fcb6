// What the Supervisor tells an observer about an attempt (the agents' recovery timeline,
// recovery_log.hpp): when its workers were started and how, and its first completed step.
// Called on the Supervisor's loop thread, from inside run_attempt; an observer must not throw
// and must not block (it may write the event log and the console).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace ddp::launch::report {

struct WorkersStarted {
  std::chrono::system_clock::time_point time;  // every worker's exec was confirmed
  size_t workers = 0;
  size_t warm_workers = 0;  // of them, taken over from pre-warmed standbys (0: all cold)
};

struct FirstStep {
  std::chrono::system_clock::time_point time;  // when the worker completed it (its record's step time)
  int rank = 0;                                // the first rank to complete a step
  uint64_t step = 0;                           // the step count it reported
  // The latest time a rank said its init_process_group returned / its state was restored, by
  // then (nullopt: no rank told).
  std::optional<std::chrono::system_clock::time_point> joined, restored;
};

class AttemptObserver {
 public:
  virtual ~AttemptObserver() = default;
  // Right after the attempt's workers started (before any of their exits is handled).
  virtual void workers_started(const WorkersStarted& started) = 0;
  // At most once per attempt: the first step any rank completed, or nullopt when no worker fed
  // its progress record within FirstStepWatch::kNoRecord (or none can: no run directory).
  // Not called when the attempt ends first without a step in any record.
  virtual void first_step(const std::optional<FirstStep>& step) = 0;
};

}  // namespace ddp::launch::report
