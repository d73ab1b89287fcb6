// The launcher's own voice on the console: "ddp-launch: TEXT" lines on stderr, written above
// a terminal's live lines when a console board is drawn (console_board.hpp), and the one
// write loop every console and log write uses. Blocking writes; single-threaded like the board.
#pragma once

#include <string>
#include <string_view>

namespace ddp::launch::console {

// Writes all of data to fd, retrying on EINTR/short writes; errors (EPIPE) are ignored.
void write_all(int fd, std::string_view data);

// "ddp-launch: TEXT\n" on stderr: the launcher's own messages (above any live lines).
void launcher_notice(const std::string& text);

}  // namespace ddp::launch::console
