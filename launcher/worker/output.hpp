// Worker output handling. LineSplitter and expand_prefix_template are pure. WorkerStream
// takes the raw bytes of one worker stream (stdout or stderr, read by the supervisor from
// a pipe): it appends them to the stream's log file as they come and writes complete
// lines, each prefixed, to the console with one write() per chunk, so lines from
// different workers never interleave. Single-threaded; blocking writes.
#pragma once

#include <deque>
#include <functional>
#include <string>
#include <string_view>

#include "launcher/os/process.hpp"

namespace ddp::launch {

// Splits a byte stream into lines. Each complete line (with its '\n') goes to the sink;
// flush() emits a trailing partial line with a '\n' added.
class LineSplitter {
 public:
  using Sink = std::function<void(std::string_view line)>;
  void feed(std::string_view data, const Sink& sink);
  void flush(const Sink& sink);

 private:
  std::string partial_;
};

// "[rank${rank}]: " -> "[rank3]: "; macros ${rank}, ${local_rank}, ${role_name}.
std::string expand_prefix_template(const std::string& tmpl, int rank, int local_rank,
                                   const std::string& role);

class WorkerStream {
 public:
  // console_fd < 0: not shown; log_file invalid: not written.
  WorkerStream(std::string prefix, int console_fd, UniqueFd log_file);
  void consume(std::string_view data);
  void finish();  // end of stream: flush a partial last line
  // The last few complete lines seen (for the failure report), oldest first.
  const std::deque<std::string>& tail() const { return tail_; }
  static constexpr size_t kTailLines = 8;

 private:
  void emit(std::string_view line);
  std::string prefix_;
  int console_fd_;
  UniqueFd log_file_;
  LineSplitter splitter_;
  std::string pending_;  // prefixed lines of the current chunk
  std::deque<std::string> tail_;
};

// Writes all of data to fd, retrying on EINTR/short writes; errors (EPIPE) are ignored.
void write_all(int fd, std::string_view data);

// "ddp-launch: TEXT\n" on stderr: the launcher's own messages.
void launcher_notice(const std::string& text);

// Opens (creates, truncates) a log file, making parent directories; LaunchError
// (exit_code::kIoError) naming the path and the reason on failure.
UniqueFd open_log_file(const std::string& path);

}  // namespace ddp::launch
