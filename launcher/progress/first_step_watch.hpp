// The first-step watch: a timer on the Supervisor's loop that, while an attempt runs, reads
// every worker's progress record (contract/progress_file.hpp) each kPoll until some rank has
// completed a step, then reports it once and stops; a group that initialised no record within
// kNoRecord (a program that feeds none) is reported once as nullopt. Single-threaded (the
// loop's thread); never blocks beyond reading small files.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/report/attempt_observer.hpp"

namespace ddp::launch::progress {

class FirstStepWatch {
 public:
  static constexpr std::chrono::milliseconds kPoll{50};
  // Generous: a Python worker's record is initialised only after its imports (torch: seconds).
  static constexpr std::chrono::seconds kNoRecord{30};

  struct Worker {
    int rank = 0;
    std::string progress_file;  // "": it has none
  };

  explicit FirstStepWatch(boost::asio::io_context& io);
  FirstStepWatch(const FirstStepWatch&) = delete;
  FirstStepWatch& operator=(const FirstStepWatch&) = delete;

  // A new attempt's workers: polls start; done() is called at most once. No worker with a
  // progress file: done(nullopt) at once.
  void start(std::vector<Worker> workers, std::function<void(const std::optional<report::FirstStep>&)> done);
  // No more polls for this attempt (safe to call twice).
  void stop();
  // The attempt ended: one last read (a step completed just before the workers exited, within
  // a poll interval) that may still report it, then stop(). Nothing found: done() is not called.
  void end();

 private:
  void schedule();
  void poll();
  std::optional<report::FirstStep> earliest_step();
  void finish(const std::optional<report::FirstStep>& step);

  boost::asio::steady_timer timer_;
  std::vector<Worker> workers_;
  std::function<void(const std::optional<report::FirstStep>&)> done_;
  std::chrono::steady_clock::time_point started_;
  bool fed_ = false;         // some record was initialised
  unsigned generation_ = 0;  // a poll armed for an earlier attempt does nothing
};

}  // namespace ddp::launch::progress
