#include "launcher/supervise/stop_signals.hpp"

#include <signal.h>

#include <algorithm>

#include <boost/asio/post.hpp>

namespace ddp::launch::supervise {

StopSignals::StopSignals(boost::asio::io_context& loop, const std::vector<int>& stop_signals,
                         const std::vector<int>& forward_signals)
    : loop_(loop), stop_signals_(stop_signals), handled_(loop), tick_(loop) {
  for (int s : stop_signals) handled_.add(s);
  for (int s : forward_signals) handled_.add(s);
  wait_for_signals();
  requests_.deliver_to(loop, [this](const std::string& reason) { on_request(reason); });
}

StopSignals::~StopSignals() { requests_.stop_delivering(); }

void StopSignals::wait_for_signals() {
  handled_.async_wait([this](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    on_signal(signo);
    wait_for_signals();
  });
}

void StopSignals::on_signal(int signo) {
  if (std::find(stop_signals_.begin(), stop_signals_.end(), signo) == stop_signals_.end()) {
    if (listener_.forward) listener_.forward(signo);
    return;
  }
  ++received_;
  const bool first = interrupt_signal_ == 0;
  if (first) interrupt_signal_ = signo;
  if (listener_.stop) listener_.stop(signo, first);
}

void StopSignals::on_request(const std::string& reason) {
  if (!stop_note_) stop_note_ = reason;
  on_signal(SIGTERM);
}

int StopSignals::poll() {
  loop_.poll();
  return interrupt_signal_;
}

void StopSignals::wake() {
  boost::asio::post(loop_, [this] {
    if (on_wake_) on_wake_();
  });
}

int StopSignals::wait_until(std::chrono::milliseconds interval, const std::function<bool()>& done) {
  const unsigned received_before = received_;
  loop_.poll();
  bool finished = false;
  std::function<void()> arm = [&] {
    tick_.expires_after(interval);
    tick_.async_wait([&](const boost::system::error_code& ec) {
      if (ec) return;
      if (done()) finished = true;
      else arm();
    });
  };
  if (received_ == received_before && done()) return 0;
  arm();
  on_wake_ = [&] {
    if (!finished && done()) finished = true;
  };
  while (!finished && received_ == received_before) loop_.run_one();
  on_wake_ = nullptr;
  tick_.cancel();
  loop_.poll();  // let the cancelled handler run while `arm` and `finished` are alive
  return finished ? 0 : interrupt_signal_;
}

}  // namespace ddp::launch::supervise
