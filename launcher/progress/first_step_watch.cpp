#include "launcher/progress/first_step_watch.hpp"

#include <algorithm>

#include "contract/progress_file.hpp"

namespace ddp::launch::progress {
namespace {

using SteadyClock = std::chrono::steady_clock;  // CLOCK_MONOTONIC on Linux: the records' clock

// A record's CLOCK_MONOTONIC time as wall-clock time (0: not recorded; now instead).
std::chrono::system_clock::time_point wall_time(uint64_t monotonic_ns) {
  const auto now = std::chrono::system_clock::now();
  if (monotonic_ns == 0) return now;
  const auto mono_now = SteadyClock::now().time_since_epoch();
  const auto ago = mono_now - std::chrono::nanoseconds(monotonic_ns);
  return now -
         std::chrono::duration_cast<std::chrono::system_clock::duration>(std::max(ago, SteadyClock::duration::zero()));
}

}  // namespace

FirstStepWatch::FirstStepWatch(boost::asio::io_context& io) : timer_(io) {}

void FirstStepWatch::start(std::vector<Worker> workers,
                           std::function<void(const std::optional<report::FirstStep>&)> done) {
  stop();
  workers_ = std::move(workers);
  done_ = std::move(done);
  started_ = SteadyClock::now();
  fed_ = false;
  bool any = false;
  for (const Worker& w : workers_) any = any || !w.progress_file.empty();
  if (!any) return finish(std::nullopt);
  poll();
}

void FirstStepWatch::stop() {
  ++generation_;
  timer_.cancel();
  done_ = nullptr;
}

void FirstStepWatch::schedule() {
  timer_.expires_after(kPoll);
  timer_.async_wait([this, generation = generation_](const boost::system::error_code& ec) {
    if (ec || generation != generation_) return;
    poll();
  });
}

void FirstStepWatch::end() {
  if (!done_) return;
  if (std::optional<report::FirstStep> first = earliest_step()) return finish(first);
  stop();
}

void FirstStepWatch::poll() {
  if (std::optional<report::FirstStep> first = earliest_step()) return finish(first);
  if (!fed_ && SteadyClock::now() - started_ >= kNoRecord) return finish(std::nullopt);
  schedule();
}

// The earliest completed step among the ranks that completed one by now.
std::optional<report::FirstStep> FirstStepWatch::earliest_step() {
  std::optional<report::FirstStep> first;
  for (const Worker& w : workers_) {
    if (w.progress_file.empty()) continue;
    const auto record = ddp::progress::read_record_file(w.progress_file);
    if (!record) continue;
    fed_ = true;
    if (record->step == 0) continue;
    const report::FirstStep step{wall_time(record->step_time_ns), w.rank, record->step};
    if (!first || step.time < first->time) first = step;
  }
  return first;
}

void FirstStepWatch::finish(const std::optional<report::FirstStep>& step) {
  auto done = std::move(done_);
  stop();
  if (done) done(step);
}

}  // namespace ddp::launch::progress
