#include "launcher/report/status_board.hpp"

namespace ddp::launch::report {

const char* to_string(WorkerState state) {
  switch (state) {
    case WorkerState::kRunning: return "running";
    case WorkerState::kSucceeded: return "succeeded";
    case WorkerState::kFailed: return "failed";
    case WorkerState::kStopped: return "stopped";
  }
  return "running";
}

void DurationHistogram::observe(double seconds) {
  for (size_t i = 0; i < kBounds.size(); ++i)
    if (seconds <= kBounds[i]) ++cumulative[i];
  ++count;
  sum += seconds;
}

void RankStatus::record_step_time(double now_unix_s, double seconds) {
  if (!step_history.empty() && now_unix_s - step_history.back().first < kHistoryEveryS) return;
  step_history.emplace_back(now_unix_s, seconds);
  while (!step_history.empty() && now_unix_s - step_history.front().first > kHistoryS) step_history.pop_front();
}

StatusBoard::Lines& StatusBoard::Lines::operator=(const Lines& other) {
  if (this == &other) return *this;
  std::deque<std::string> lines = other.copy();
  const std::lock_guard<std::mutex> lock(mutex_);
  lines_ = std::move(lines);
  return *this;
}

void StatusBoard::Lines::add(std::string line, size_t keep) {
  const std::lock_guard<std::mutex> lock(mutex_);
  lines_.push_back(std::move(line));
  while (lines_.size() > keep) lines_.pop_front();
}

std::deque<std::string> StatusBoard::Lines::copy() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return lines_;
}

void StatusBoard::add_event(std::string json_line) { events_.add(std::move(json_line), kRecentEvents); }

std::deque<std::string> StatusBoard::recent_events() const { return events_.copy(); }

void StatusBoard::set_workers(const std::vector<std::pair<int, int>>& ranks_in) {
  ranks.clear();
  for (const auto& [rank, local_rank] : ranks_in) {
    RankStatus r;
    r.rank = rank;
    r.local_rank = local_rank;
    ranks.push_back(r);
  }
}

RankStatus* StatusBoard::find_rank(int rank) {
  for (RankStatus& r : ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

}  // namespace ddp::launch::report
