// StopRequests: how another thread asks a node to stop its job, with the reason it gives (a
// many-host agent's stdin watch: the launching machine said why, or its session ended). A
// request is posted to the loop of the listener (deliver_to) and handled there
// like a stop signal whose report tells the reason instead of the signal's name; one made
// before anyone listens is delivered when one does. Thread-safe; never signals the process.
// The node's StopSignals (stop_signals.hpp) owns one and listens for the job's life.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace boost::asio {
class io_context;
}

namespace ddp::launch::supervise {

class StopRequests {
 public:
  using Handler = std::function<void(const std::string& reason)>;

  // Any thread: stop the job for `reason` (a second request, like a second signal, kills).
  void request(std::string reason);
  // The listener's thread: from now on each request runs `handler` on `loop` (a pending one
  // too). stop_delivering() before the loop or the handler's owner goes.
  void deliver_to(boost::asio::io_context& loop, Handler handler);
  void stop_delivering();

 private:
  void post_locked();
  std::mutex mutex_;
  std::optional<std::string> reason_;  // asked, not yet posted
  boost::asio::io_context* loop_ = nullptr;
  std::shared_ptr<Handler> handler_;  // a posted request that runs after stop_delivering() finds it empty
};

}  // namespace ddp::launch::supervise
