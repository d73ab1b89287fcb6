// WorkerStreams: one worker's stdout and stderr as the Supervisor's child set reads them
// (os/child_set.hpp), each into its WorkerStream: prefixed console lines, the log file, the
// terminal's live lines. output() gives the set its sinks. Single-threaded (the supervisor's
// loop); the owner keeps it alive while the worker's output is open.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "launcher/os/child_set.hpp"
#include "launcher/console/console_board.hpp"
#include "launcher/worker/output.hpp"
#include "launcher/worker/worker_launch.hpp"

namespace ddp::launch::supervise {

class WorkerStreams {
 public:
  // board may be null. on_data runs after every chunk read (e.g. to redraw live lines).
  WorkerStreams(const worker::WorkerLaunch& launch, console::ConsoleBoard* board, std::function<void()> on_data);
  WorkerStreams(const WorkerStreams&) = delete;
  WorkerStreams& operator=(const WorkerStreams&) = delete;

  os::ChildEvents output();  // sinks into this object
  const std::deque<std::string>& stderr_tail() const { return err_.tail(); }

 private:
  static worker::WorkerStream make_stream(const worker::WorkerLaunch& launch, bool to_console, int console_fd,
                                          const std::string& log, console::ConsoleBoard* board,
                                          std::shared_ptr<worker::DuplicateLog> duplicate);
  worker::WorkerStream out_;
  worker::WorkerStream err_;
  std::function<void()> on_data_;
};

}  // namespace ddp::launch::supervise
