// The console's live lines while workers run: the ConsoleBoard (worker/console_board.hpp),
// drawn on stderr if it is a terminal, else on stdout, else none, and the timer that
// redraws changed live lines at most every kRefresh. Single-threaded (the Supervisor's loop).
#pragma once

#include <chrono>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/console/console_board.hpp"

namespace ddp::launch::supervise {

class LiveConsole {
 public:
  static constexpr std::chrono::milliseconds kRefresh{100};  // unfinished lines show within this

  explicit LiveConsole(boost::asio::io_context& io);
  LiveConsole(const LiveConsole&) = delete;
  LiveConsole& operator=(const LiveConsole&) = delete;

  console::ConsoleBoard* board() { return board_.get(); }  // null when no terminal is attached
  // A worker stream changed a live line: redraw within kRefresh (one timer at a time).
  void schedule_refresh();
  void cancel() { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
  bool armed_ = false;
  std::unique_ptr<console::ConsoleBoard> board_;
};

}  // namespace ddp::launch::supervise
