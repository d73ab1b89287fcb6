

#include "launcher/console/console_board.hpp"
#include "launcher/os/process.hpp"
#include "launcher/supervise/worker_streams.hpp"
#include <unistd.h>
#include <utility>

namespace ddp::launch::supervise {

worker::WorkerStream WorkerStreams::make_stream(const worker::WorkerLaunch& launch, bool to_console, int console_fd,
                                                const std::string& log, console::ConsoleBoard* board,
                                                std::shared_ptr<worker::DuplicateLog> duplicate) {
  os::UniqueFd file = log.empty() ? os::UniqueFd() : worker::open_log_file(log);
  const bool on_board = board && os::is_terminal(console_fd) && os::same_file(console_fd, board->fd());
  const int slot = 2 * launch.local_rank + (console_fd == STDERR_FILENO ? 1 : 0);
  return worker::WorkerStream(launch.prefix, to_console ? console_fd : -1, std::move(file), on_board ? board : nullptr,
                              slot, std::move(duplicate));
}

WorkerStreams::WorkerStreams(const worker::WorkerLaunch& launch, console::ConsoleBoard* board,
                             std::function<void()> on_data)
    : out_(make_stream(launch, launch.stdout_to_console, STDOUT_FILENO, launch.stdout_log, board,
                       launch.stdout_duplicate)),
      err_(make_stream(launch, launch.stderr_to_console, STDERR_FILENO, launch.stderr_log, board,
                       launch.stderr_duplicate)),
      on_data_(std::move(on_data)) {}

os::ChildEvents WorkerStreams::output() {
  os::ChildEvents sinks;
  sinks.data = [this](int stream, std::string_view chunk) {
    if (!chunk.empty()) (stream == 1 ? out_ : err_).consume(chunk);
    if (on_data_) on_data_();
  };
  sinks.end = [this](int stream) { (stream == 1 ? out_ : err_).finish(); };
  return sinks;
}

}  // namespace ddp::launch::supervise
