// The progress monitor: the one reader of the workers' progress records
// (contract/progress_file.hpp). A timer on the Supervisor's event loop reads each record once
// per tick and hands the reads to its consumers: every kTick the progress sampler, and through
// it the hang detector (a verdict goes to on_hang; sampling then stops) and the straggler
// detector (its notices are printed and logged here) and the status board; every read, to
// the board's goodput ledger; every
// FirstStepWatch::kPoll, until the attempt's first step is seen, the first-step watch (for the
// attempt observer). It runs while some consumer is on. Single-threaded (the loop's thread);
// never blocks beyond reading small files.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/progress/first_step_watch.hpp"
#include "launcher/progress/hang_detector.hpp"
#include "launcher/progress/progress_sampler.hpp"
#include "launcher/progress/straggler_detector.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/report/status_board.hpp"

namespace ddp::launch::progress {

struct ProgressMonitorConfig {
  double hang_timeout_s = 0;       // --hang-timeout; 0: no hang detection; < 0: auto
  double straggler_threshold = 0;  // --straggler-threshold; 0: no straggler notices
};

class ProgressMonitor {
 public:
  static constexpr std::chrono::milliseconds kTick{500};  // a verdict within the limit + this

  struct Worker {
    int rank = 0;
    long pid = 0;  // also its process group (it leads its own session)
    std::string progress_file;
  };
  // What the Supervisor answers at each tick, for worker i (by index).
  struct Probe {
    std::function<bool(size_t)> live;              // it has not exited
    std::function<uint64_t(size_t)> output_bytes;  // read from its pipes so far
  };

  // events: where straggler notices are logged; board: where each tick's samples and straggler
  // flags go (a board is a consumer: the monitor ticks for it alone). Either may be null
  // (nowhere); both borrowed.
  ProgressMonitor(boost::asio::io_context& io, ProgressMonitorConfig config, report::EventLog* events = nullptr,
                  report::StatusBoard* board = nullptr);
  ProgressMonitor(const ProgressMonitor&) = delete;
  ProgressMonitor& operator=(const ProgressMonitor&) = delete;

  using FirstStepHandler = std::function<void(const std::optional<report::FirstStep>&)>;

  // A new attempt's workers: ticks start while a consumer is on (sampling needs every worker
  // to have a progress file). on_hang gets the verdict (culprit: an index into `workers`).
  // on_first_step (may be empty) is told once of the attempt's earliest completed step, or of
  // none (nullopt: no record initialised within FirstStepWatch::kNoRecord, or no worker has a
  // progress file: then at once).
  void start(std::vector<Worker> workers, Probe probe, std::function<void(HangVerdict)> on_hang,
             FirstStepHandler on_first_step = {});
  // No more sampling for this attempt (safe to call twice, and from a tick's handler); the
  // first-step watch goes on until end().
  void stop();
  // The attempt ended: a last read that may still tell of a first step (one completed within a
  // poll of the workers' exit; nothing found: nothing told), then no more ticks.
  void end();

  // The latest samples (empty before the first tick), for any other consumer.
  const std::vector<RankSample>& samples() const;

 private:
  void schedule();
  void tick();
  std::vector<std::optional<ddp::progress::Record>> read_records() const;
  void sample(const std::vector<std::optional<ddp::progress::Record>>& records);
  void watch_first_step(const std::vector<std::optional<ddp::progress::Record>>& records, bool end_of_attempt);
  std::vector<HangDetector::SignsOfLife> signs_of_life() const;
  void post_samples() const;
  void account(const std::vector<std::optional<ddp::progress::Record>>& records) const;

  boost::asio::steady_timer timer_;
  ProgressMonitorConfig config_;
  report::EventLog* events_ = nullptr;
  report::StatusBoard* board_ = nullptr;
  std::vector<Worker> workers_;
  Probe probe_;
  std::function<void(HangVerdict)> on_hang_;
  std::optional<ProgressSampler> sampler_;
  std::optional<HangDetector> hang_;
  std::optional<StragglerDetector> straggler_;
  bool sampling_ = false;  // the sampler's consumers are on
  std::chrono::steady_clock::time_point next_sample_;
  std::optional<FirstStepWatch> first_step_;  // waiting for the attempt's first step
  FirstStepHandler on_first_step_;
  unsigned generation_ = 0;  // a tick armed for an earlier attempt does nothing
};

}  // namespace ddp::launch::progress
