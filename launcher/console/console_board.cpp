#include "launcher/console/console_board.hpp"

#include <fmt/format.h>

namespace ddp::launch::console {
namespace {
ConsoleBoard* g_active = nullptr;
}  // namespace

ConsoleBoard::ConsoleBoard(int fd, std::function<int()> columns, Writer writer)
    : fd_(fd), columns_(std::move(columns)), writer_(std::move(writer)) {
  g_active = this;
}

ConsoleBoard::~ConsoleBoard() {
  if (drawn_lines_ > 0) writer_(fd_, erase());
  if (g_active == this) g_active = nullptr;
}

ConsoleBoard* ConsoleBoard::active() { return g_active; }

void ConsoleBoard::write_lines(int fd, std::string_view lines) {
  if (lines.empty()) return;
  if (drawn_lines_ == 0) {
    writer_(fd, lines);
    return;
  }
  std::string before = erase();
  drawn_lines_ = 0;
  if (fd == fd_) {  // one write: the block never flickers between erase and redraw
    before += lines;
    before += draw();
    writer_(fd_, before);
    return;
  }
  writer_(fd_, before);
  writer_(fd, lines);
  writer_(fd_, draw());
}

void ConsoleBoard::set_live(int slot, std::string text) {
  auto it = live_.find(slot);
  if (text.empty()) {
    if (it == live_.end()) return;
    live_.erase(it);
  } else if (it != live_.end()) {
    if (it->second == text) return;
    it->second = std::move(text);
  } else {
    live_.emplace(slot, std::move(text));
  }
  dirty_ = true;
}

void ConsoleBoard::refresh() {
  if (!dirty_) return;
  std::string out = erase();
  drawn_lines_ = 0;
  out += draw();
  writer_(fd_, out);
}

// Cursor to the start of the block's first line, then clear to the end of the screen.
std::string ConsoleBoard::erase() const {
  if (drawn_lines_ == 0) return "";
  if (drawn_lines_ == 1) return "\r\x1b[J";
  return fmt::format("\r\x1b[{}A\x1b[J", drawn_lines_ - 1);
}

// The block, one line per live slot, the cursor left at the end of the last one.
std::string ConsoleBoard::draw() {
  dirty_ = false;
  std::string out;
  const int columns = columns_ ? columns_() : 0;
  size_t n = 0;
  for (const auto& [slot, text] : live_) {
    if (n == kMaxLiveLines) break;
    if (n++ > 0) out += '\n';
    out += fit_to_width(text, columns);
  }
  drawn_lines_ = n;
  return out;
}

std::string fit_to_width(std::string_view text, int columns) {
  std::string out;
  int cells = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b) {  // skip an escape sequence: ESC [ ... final byte
      if (i + 1 < text.size() && text[i + 1] == '[') {
        i += 2;
        while (i < text.size() && !(text[i] >= 0x40 && text[i] <= 0x7e)) ++i;
      }
      continue;
    }
    if (c == '\t') c = ' ';
    if (c < 0x20) continue;
    const bool starts_char = (c & 0xc0) != 0x80;
    if (starts_char) {
      if (columns > 0 && cells >= columns - 1) break;
      ++cells;
    }
    out += static_cast<char>(c);
  }
  return out;
}

}  // namespace ddp::launch::console
