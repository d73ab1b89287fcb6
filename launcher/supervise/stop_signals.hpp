// StopSignals: how a node's job is asked to stop, for the whole job (NodeSession owns it; the
// Supervisor of each attempt listens): the launcher's handled signals as an Asio signal_set on
// the node's loop, the stop requests posted to it (stop_requests.hpp: a stop signal that says
// why), what was received (the first stop signal, the stop's note, how many), and the waits
// between attempts that a stop ends (wait_until). A stop signal is one of `stop_signals` (or a
// stop request, as SIGTERM); the others handled are forwarded only. wake() runs the current
// wait's check now: the attempt's (its Supervisor sets it) or wait_until's. Not thread-safe
// but for wake() and the stop requests; the loop's thread.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/supervise/stop_requests.hpp"

namespace ddp::launch::supervise {

class StopSignals {
 public:
  // What the attempt's Supervisor does with a signal. stop(signo, first): a stop signal (the
  // first of the job, or a later one: kill now); forward(signo): another handled signal.
  struct Listener {
    std::function<void(int signo, bool first)> stop;
    std::function<void(int signo)> forward;
  };

  // Handles stop_signals and forward_signals on `loop` from now on.
  StopSignals(boost::asio::io_context& loop, const std::vector<int>& stop_signals,
              const std::vector<int>& forward_signals);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // Stop requests from other threads, or from the loop's own watchers (stop_input.hpp).
  StopRequests& requests() { return requests_; }
  // The listener from now on (an empty one: nobody).
  void listen(Listener listener) { listener_ = std::move(listener); }
  // What wake() runs now (empty: nothing); the loop's thread only.
  void on_wake(std::function<void()> action) { on_wake_ = std::move(action); }

  // The stop signal received so far (0 if none; SIGTERM for a stop request): the agent stops
  // restarting once set.
  int interrupted_by() const { return interrupt_signal_; }
  // What the stop's asker said (a stop request's reason); nullopt for a plain signal.
  const std::optional<std::string>& stop_note() const { return stop_note_; }
  // Delivers pending signals and requests without blocking, then returns interrupted_by().
  int poll();
  // With no workers running: calls done() every interval until it returns true (0 is
  // returned) or a stop signal arrives during the call (the first stop signal received is
  // returned). One received before the call does not end it: after a stop the agent still
  // waits, briefly, for the other nodes to read the outcome. Used for barriers.
  int wait_until(std::chrono::milliseconds interval, const std::function<bool()>& done);
  // Thread-safe: runs the current wait's check now, on the loop, rather than at its next
  // interval; does nothing when none runs. For an event source on another thread (the
  // multi-node agent's abort wait thread: a store key appeared).
  void wake();

 private:
  void wait_for_signals();
  void on_signal(int signo);
  void on_request(const std::string& reason);

  boost::asio::io_context& loop_;
  std::vector<int> stop_signals_;
  boost::asio::signal_set handled_;
  boost::asio::steady_timer tick_;  // wait_until's
  StopRequests requests_;
  Listener listener_;
  std::function<void()> on_wake_;
  int interrupt_signal_ = 0;
  std::optional<std::string> stop_note_;
  unsigned received_ = 0;  // stop signals so far (wait_until ends on a new one)
};

}  // namespace ddp::launch::supervise
