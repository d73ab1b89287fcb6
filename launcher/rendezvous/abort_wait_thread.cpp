#include "launcher/rendezvous/abort_wait_thread.hpp"

#include "launcher/rendezvous/rendezvous.hpp"

namespace ddp::launch::rendezvous {
namespace {
// One wait's length: only shutdown (interrupt) or a new round (whose predecessor's key
// exists, so that wait returns at once) ends a wait early, so it can be long.
constexpr store::Duration kSlice{10000};
}  // namespace

AbortWaitThread::AbortWaitThread(std::unique_ptr<KeyWaiter> waiter, std::function<void()> wake)
    : waiter_(std::move(waiter)), wake_(std::move(wake)), thread_([this] { loop(); }) {}

AbortWaitThread::~AbortWaitThread() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  waiter_->interrupt();
  thread_.join();
}

void AbortWaitThread::wait_for_round(int round) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    round_ = round;
  }
  cv_.notify_all();
}

void AbortWaitThread::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || (round_ >= 0 && round_ != fired_); });
    if (stop_) return;
    const int round = round_;
    lock.unlock();
    bool seen = false;
    try {
      seen = waiter_->wait_for(JobKeys::abort(round), kSlice);
    } catch (const store::StoreError&) {  // the store is lost or we were interrupted: see the header
      return;
    }
    lock.lock();
    if (seen) {
      fired_ = round;
      wake_();
    }
  }
}

}  // namespace ddp::launch::rendezvous
