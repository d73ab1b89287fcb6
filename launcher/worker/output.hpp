// Worker output handling. LineSplitter and expand_prefix_template are pure. WorkerStream
// takes the raw bytes of one worker stream (stdout or stderr, read by the supervisor from
// a pipe): it appends them to the stream's log file as they come (raw) and writes complete
// lines, each prefixed, to the console with one write() per chunk, so lines from
// different workers never interleave. On a terminal (a ConsoleBoard) the unfinished line
// is shown live too. Memory per stream is bounded by kMaxLineBytes. Single-threaded;
// blocking writes.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/console/console_board.hpp"
#include "launcher/os/process.hpp"

namespace ddp::launch::worker {

// Splits a byte stream into console lines. Each complete line (with its '\n') goes to the
// sink. A carriage return starts the line over, as on a terminal: "a\rb\n" is "b\n" (a
// "\r\n" ending is "\n"). A line longer than kMaxLineBytes goes out in pieces of that
// size, each ending in '\n' (cut at a UTF-8 character boundary). flush() emits a trailing
// partial line with a '\n' added.
class LineSplitter {
 public:
  static constexpr size_t kMaxLineBytes = 64 * 1024;
  using Sink = std::function<void(std::string_view line)>;
  void feed(std::string_view data, const Sink& sink);
  void flush(const Sink& sink);
  // The unfinished line as a terminal would show it now (after its last '\r').
  std::string_view partial() const { return partial_; }

 private:
  void append_bounded(std::string_view text, const Sink& sink);
  std::string partial_;
  bool carriage_return_ = false;  // the last byte was '\r': the next text starts over
};

// "[rank${rank}]: " -> "[rank3]: "; macros ${rank}, ${local_rank}, ${role_name}, ${hostname}
// (torchrun 2.x: this machine's name).
std::string expand_prefix_template(const std::string& tmpl, int rank, int local_rank, const std::string& role,
                                   const std::string& hostname = "");

// --duplicate-stdout/stderr-filters: one file per attempt and stream (filtered_stdout.log),
// shared by the streams of every rank, that gets each line (prefixed) containing any of the
// filters. Lines are whole and written one write() each, so ranks never interleave within a line.
class DuplicateLog {
 public:
  DuplicateLog(std::vector<std::string> filters, os::UniqueFd file);
  void offer(std::string_view prefix, std::string_view line);  // line ends in '\n'

 private:
  std::vector<std::string> filters_;
  os::UniqueFd file_;
};

// True when line contains at least one of the filters (torchrun: `needle in line`).
bool matches_any(std::string_view line, const std::vector<std::string>& filters);

class WorkerStream {
 public:
  // console_fd < 0: not shown; log_file invalid: not written. board (may be null): the
  // terminal console's live lines, where this stream's unfinished line shows as `slot`.
  // duplicate (may be null): where this stream's lines matching a filter are copied.
  WorkerStream(std::string prefix, int console_fd, os::UniqueFd log_file, console::ConsoleBoard* board = nullptr,
               int slot = 0, std::shared_ptr<DuplicateLog> duplicate = nullptr);
  void consume(std::string_view data);
  void finish();  // end of stream: flush a partial last line
  // The last few complete lines seen (for the failure report), oldest first.
  const std::deque<std::string>& tail() const { return tail_; }
  static constexpr size_t kTailLines = 8;

 private:
  void emit(std::string_view line);
  void write_pending();
  std::string prefix_;
  int console_fd_;
  os::UniqueFd log_file_;
  console::ConsoleBoard* board_;
  int slot_;
  std::shared_ptr<DuplicateLog> duplicate_;
  LineSplitter splitter_;
  std::string pending_;  // prefixed lines of the current chunk
  std::deque<std::string> tail_;
};

// Opens (creates, truncates) a log file, making parent directories; LaunchError
// (exit_code::kIoError) naming the path and the reason on failure.
os::UniqueFd open_log_file(const std::string& path);

}  // namespace ddp::launch::worker
