// FifoLines: a named pipe (FIFO) this process makes, owns and reads line by line on a borrowed
// single-threaded Asio loop; the file is removed when it goes. The read end is non-blocking and
// the process holds a write end of its own, so the pipe never reads as ended between writers
// and no read ever blocks the loop; the pipe holds 1 MiB (where the kernel allows; else 64 KiB),
// and a writer that fills it gets EAGAIN, not the launcher. A line longer than max_line bytes (torch's writers send at
// most PIPE_BUF, which the kernel keeps whole) is dropped up to its newline and reported as such. Used for torch's
// FileTimerClient requests (supervise/worker_health.hpp). Not thread-safe (the loop's thread).
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include "launcher/os/process.hpp"

namespace ddp::launch::os {

class FifoLines {
 public:
  // One line without its newline, or (too_long) the first bytes of one that was dropped.
  using LineHandler = std::function<void(std::string_view line, bool too_long)>;

  // Makes the FIFO at `path` (an old FIFO there is replaced; any other file there is an
  // error, never removed) with mode 0600 and opens it. Throws LaunchError(kIoError) naming the
  // path and what to do. Lines are read once listen() names a handler.
  FifoLines(boost::asio::io_context& loop, std::string path, size_t max_line);
  ~FifoLines();  // stops reading, closes and removes the FIFO
  FifoLines(const FifoLines&) = delete;
  FifoLines& operator=(const FifoLines&) = delete;

  const std::string& path() const { return path_; }
  // Lines go to `handler` from now on (empty: they wait in the pipe until a handler is set).
  void listen(LineHandler handler);
  // Drops whatever the pipe holds now, unread (what writers that are gone left behind).
  void discard_unread();

 private:
  void read();
  void take(size_t n);

  std::string path_;
  size_t max_line_;
  UniqueFd own_writer_;  // keeps the pipe open between writers
  boost::asio::posix::stream_descriptor reader_;
  std::array<char, 8192> buf_{};
  std::string pending_;    // a line not yet ended
  bool skipping_ = false;  // inside a line that was too long
  bool reading_ = false;
  LineHandler handler_;
};

}  // namespace ddp::launch::os
