

#include "contract/progress_file.hpp"
#include "launcher/base/clock.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/cpu_time.hpp"
#include "launcher/progress/progress_monitor.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/report/status_board.hpp"
#include <algorithm>
#include <set>

namespace ddp::launch::progress {
namespace {

// CLOCK_MONOTONIC seconds (steady_clock on Linux): the clock of the records' own times.
double monotonic_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

const std::vector<RankSample> kNoSamples;

}  // namespace

ProgressMonitor::ProgressMonitor(boost::asio::io_context& io, ProgressMonitorConfig config, report::EventLog* events,
                                 report::StatusBoard* board)
    : timer_(io), config_(config), events_(events), board_(board) {}

const std::vector<RankSample>& ProgressMonitor::samples() const { return sampler_ ? sampler_->samples() : kNoSamples; }

void ProgressMonitor::start(std::vector<Worker> workers, Probe probe, std::function<void(HangVerdict)> on_hang,
                            FirstStepHandler on_first_step) {
  ++generation_;  // the previous attempt's tick, still queued, does nothing
  timer_.cancel();
  sampling_ = false;
  first_step_.reset();
  on_first_step_ = nullptr;
  sampler_.reset();
  hang_.reset();
  straggler_.reset();
  workers_ = std::move(workers);
  probe_ = std::move(probe);
  on_hang_ = std::move(on_hang);
  const bool files = !workers_.empty() && std::none_of(workers_.begin(), workers_.end(), [](const Worker& w) {
    return w.progress_file.empty();  // no run directory: nothing to read
  });
  if (on_first_step) {
    if (!files) return on_first_step(std::nullopt);
    std::vector<int> ranks;
    for (const Worker& w : workers_) ranks.push_back(w.rank);
    first_step_.emplace(std::move(ranks), std::chrono::steady_clock::now());
    on_first_step_ = std::move(on_first_step);
  }
  if (files) {
    std::vector<ProgressSampler::Rank> ranks;
    for (const Worker& w : workers_) ranks.push_back({w.rank, w.pid});
    const double now = monotonic_s();
    if (config_.hang_timeout_s != 0) hang_.emplace(config_.hang_timeout_s, workers_.size(), now);
    if (config_.straggler_threshold > 0) straggler_.emplace(config_.straggler_threshold);
    sampling_ = hang_ || straggler_ || board_;
    if (sampling_) sampler_.emplace(std::move(ranks), now);
    next_sample_ = std::chrono::steady_clock::now() + kTick;
  }
  if (first_step_) watch_first_step(read_records(), false);  // a restart's workers may be fast
  schedule();
}

void ProgressMonitor::stop() { sampling_ = false; }

void ProgressMonitor::end() {
  const std::vector<std::optional<ddp::progress::Record>> records = read_records();
  account(records);  // the attempt's last steps (its workers are gone: their records stay)
  if (first_step_) watch_first_step(records, true);
  first_step_.reset();
  on_first_step_ = nullptr;
  sampling_ = false;
  ++generation_;
  timer_.cancel();
}

void ProgressMonitor::schedule() {
  if (!sampling_ && !first_step_) return;
  const auto poll = std::chrono::steady_clock::now() + FirstStepWatch::kPoll;
  const auto at = !sampling_ ? poll : first_step_ ? std::min(poll, next_sample_) : next_sample_;
  timer_.expires_at(at);
  timer_.async_wait([this, generation = generation_](const boost::system::error_code& ec) {
    if (ec || generation != generation_) return;
    tick();
  });
}

void ProgressMonitor::tick() {
  const std::vector<std::optional<ddp::progress::Record>> records = read_records();
  account(records);
  if (first_step_) watch_first_step(records, false);
  if (sampling_ && std::chrono::steady_clock::now() >= next_sample_) {
    next_sample_ = std::chrono::steady_clock::now() + kTick;
    sample(records);
  }
  schedule();
}

// Every read into the board's goodput ledger, its times made Unix seconds.
void ProgressMonitor::account(const std::vector<std::optional<ddp::progress::Record>>& records) const {
  if (!board_ || workers_.empty()) return;
  const double now = unix_now();
  board_->goodput.observe(now, now - monotonic_s(), records);
}

// Every worker's record, read once (nullopt: none yet, or unreadable).
std::vector<std::optional<ddp::progress::Record>> ProgressMonitor::read_records() const {
  std::vector<std::optional<ddp::progress::Record>> records;
  for (const Worker& w : workers_) records.push_back(ddp::progress::read_record_file(w.progress_file));
  return records;
}

void ProgressMonitor::watch_first_step(const std::vector<std::optional<ddp::progress::Record>>& records,
                                       bool end_of_attempt) {
  const FirstStepWatch::Answer answer = first_step_->observe(records, std::chrono::steady_clock::now(), end_of_attempt);
  if (answer.seen == FirstStepWatch::Seen::kNothingYet) return;
  FirstStepHandler told = std::move(on_first_step_);
  first_step_.reset();
  on_first_step_ = nullptr;
  if (told) told(answer.seen == FirstStepWatch::Seen::kStep ? std::optional(answer.step) : std::nullopt);
}

// The sampler and its consumers: the hang detector, the straggler detector, the board. An
// exited worker's record counts as unread (the sampler keeps its last values).
void ProgressMonitor::sample(const std::vector<std::optional<ddp::progress::Record>>& read) {
  std::vector<std::optional<ddp::progress::Record>> records;
  std::vector<bool> live;
  for (size_t i = 0; i < workers_.size(); ++i) {
    live.push_back(probe_.live(i));
    records.push_back(live.back() ? read[i] : std::nullopt);
  }
  const double now = monotonic_s();
  sampler_->observe(now, records, live);
  if (board_) post_samples();
  if (hang_) {
    const auto signs =
        HangDetector::wants_signs_of_life(*sampler_) ? signs_of_life() : std::vector<HangDetector::SignsOfLife>{};
    if (auto verdict = hang_->observe(now, *sampler_, signs)) {
      stop();
      on_hang_(std::move(*verdict));
      return;
    }
  }
  if (straggler_) {
    for (const auto& flag : straggler_->observe(now, *sampler_)) {
      console::launcher_notice(flag.notice);
      if (board_)
        if (report::RankStatus* row = board_->find_rank(flag.rank)) row->straggler = true;
      if (events_)
        events_->write("straggler", {{"rank", flag.rank},
                                     {"pid", flag.pid},
                                     {"step_s", flag.step_s},
                                     {"median_s", flag.median_s},
                                     {"threshold", config_.straggler_threshold}});
    }
  }
}

// This tick's samples into the board's rows (the last known values stay once a worker exits).
void ProgressMonitor::post_samples() const {
  const double now_unix = unix_now();
  for (const RankSample& s : sampler_->samples()) {
    report::RankStatus* row = board_->find_rank(s.rank);
    if (!row) continue;
    row->fed = row->fed || s.ever_fed;
    row->since_progress_s = s.idle_s;
    if (s.step_s) {
      row->step_s = s.step_s;
      row->record_step_time(now_unix, *s.step_s);
    }
    if (s.record) {
      row->step = s.record->step;
      row->collective_seq = s.record->seq_completed;
    }
  }
}

// Output and CPU time per worker, for a hang detector with a worker that feeds nothing yet.
std::vector<HangDetector::SignsOfLife> ProgressMonitor::signs_of_life() const {
  std::set<long> groups;
  for (const Worker& w : workers_) groups.insert(w.pid);
  const auto cpu = os::process_group_cpu_ticks(groups);
  std::vector<HangDetector::SignsOfLife> signs;
  for (size_t i = 0; i < workers_.size(); ++i) signs.push_back({probe_.output_bytes(i), cpu.at(workers_[i].pid)});
  return signs;
}

}  // namespace ddp::launch::progress
