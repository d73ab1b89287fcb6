// snapshot_fence.hpp: a count of writes in flight under one mutex and a condition variable.
#include "runtime/src/checkpoint/snapshot_fence.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace ddp::detail::snapshot_fence {
namespace {

struct State {
  std::mutex mutex;
  std::condition_variable idle;
  int in_flight = 0;
  double waited = 0;
  std::atomic<bool> backward_fenced{false};
};

State& state() {
  static State s;
  return s;
}

}  // namespace

void hold() {
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().in_flight;
}

void release() {
  State& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    --s.in_flight;
  }
  s.idle.notify_all();
}

double wait() {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.mutex);
  if (s.in_flight == 0) return 0;
  const auto start = std::chrono::steady_clock::now();
  s.idle.wait(lock, [&] { return s.in_flight == 0; });
  const double blocked = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  s.waited += blocked;
  return blocked;
}

double wait_in_backward() {
  state().backward_fenced = true;
  return wait();
}

bool backward_fenced() { return state().backward_fenced; }

double waited_seconds() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().waited;
}

}  // namespace ddp::detail::snapshot_fence
