// ConsoleBoard: the live lines of a terminal console. Workers' unfinished lines (a '\r'
// progress bar, a "(Pdb) " prompt) are drawn as a block of status lines at the bottom of
// the terminal, one per worker stream, each with its prefix and cut to the terminal width.
// Complete lines are written above the block: erase the block, write them, redraw. Redraws
// of changed live lines wait for refresh(), which the supervisor calls every ~100 ms.
// Single-threaded; blocking writes.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace ddp::launch::console {

class ConsoleBoard {
 public:
  using Writer = std::function<void(int fd, std::string_view bytes)>;
  static constexpr size_t kMaxLiveLines = 16;  // more live streams: the lowest slots are shown

  // fd: the terminal the block is drawn on; columns(): its width now (0: unknown).
  ConsoleBoard(int fd, std::function<int()> columns, Writer writer);
  ~ConsoleBoard();
  ConsoleBoard(const ConsoleBoard&) = delete;
  ConsoleBoard& operator=(const ConsoleBoard&) = delete;

  // Complete lines (each ending in '\n') for fd, written above the block at once.
  void write_lines(int fd, std::string_view lines);
  // Slot's live line is now TEXT (prefix included); "" removes it. Drawn at refresh().
  void set_live(int slot, std::string text);
  bool dirty() const { return dirty_; }
  int fd() const { return fd_; }
  void refresh();  // redraws the block if a live line changed

  // The board of the launcher's console while one exists (for launcher_notice), or null.
  static ConsoleBoard* active();

 private:
  std::string erase() const;
  std::string draw();
  int fd_;
  std::function<int()> columns_;
  Writer writer_;
  std::map<int, std::string> live_;
  size_t drawn_lines_ = 0;
  bool dirty_ = false;
};

// TEXT cut to at most COLUMNS - 1 display cells (UTF-8 code points; escape sequences and
// control bytes dropped, a tab shown as one space). columns <= 0: no cut.
std::string fit_to_width(std::string_view text, int columns);

}  // namespace ddp::launch::console
