#include "launcher/supervise/status_board.hpp"

namespace ddp::launch::supervise {

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

void StatusBoard::add_event(std::string json_line) {
  events.push_back(std::move(json_line));
  while (events.size() > kRecentEvents) events.pop_front();
}

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

}  // namespace ddp::launch::supervise
