#include "launcher/console/notice.hpp"

#include <unistd.h>

#include <cerrno>

#include "launcher/console/console_board.hpp"

namespace ddp::launch::console {

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // EPIPE and friends: the reader is gone; nothing useful to do
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void launcher_notice(const std::string& text) {
  const std::string line = "ddp-launch: " + text + "\n";
  if (ConsoleBoard* board = ConsoleBoard::active()) board->write_lines(STDERR_FILENO, line);
  else write_all(STDERR_FILENO, line);
}

}  // namespace ddp::launch::console
