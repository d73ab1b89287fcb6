// WorkerPipes: one worker's stdout and stderr, each a pipe read asynchronously on the
// supervisor's io_context into its WorkerStream (prefixed console lines, the log file, the
// terminal's live lines). The constructor makes the pipes and points the worker's spawn
// spec at their write ends; close_write_ends() after the fork. Single-threaded (the
// supervisor's loop); the owner keeps it alive until open() is false.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "launcher/supervise/supervisor.hpp"
#include "launcher/worker/console_board.hpp"
#include "launcher/worker/output.hpp"

namespace ddp::launch::supervise {

class WorkerPipes {
 public:
  // board may be null. on_data runs after every chunk read (e.g. to redraw live lines).
  WorkerPipes(boost::asio::io_context& io, worker::WorkerLaunch& launch, worker::ConsoleBoard* board,
              std::function<void()> on_data);
  WorkerPipes(const WorkerPipes&) = delete;
  WorkerPipes& operator=(const WorkerPipes&) = delete;

  void close_write_ends();  // the child has its copies: EOF then means the worker is done
  void start_reading();
  bool open() const;  // either pipe may still deliver data
  void cancel();      // stop reading (a grandchild holds a pipe past the drain)
  const std::deque<std::string>& stderr_tail() const { return err_.stream.tail(); }
  uint64_t bytes_read() const { return bytes_read_; }  // both pipes: a sign of life (hang detector)

 private:
  struct Reader {
    Reader(boost::asio::io_context& io, os::UniqueFd read_end, worker::WorkerStream s);
    boost::asio::posix::stream_descriptor descriptor;
    worker::WorkerStream stream;
    std::array<char, 65536> buffer{};
    bool open = true;
  };
  static Reader make_reader(boost::asio::io_context& io, os::Pipe& pipe, const worker::WorkerLaunch& launch,
                            bool to_console, int console_fd, const std::string& log, worker::ConsoleBoard* board,
                            std::shared_ptr<worker::DuplicateLog> duplicate);
  void read(Reader& reader);

  os::Pipe out_pipe_;
  os::Pipe err_pipe_;
  Reader out_;
  Reader err_;
  std::function<void()> on_data_;
  uint64_t bytes_read_ = 0;
};

}  // namespace ddp::launch::supervise
