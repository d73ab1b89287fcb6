

#include "launcher/console/console_board.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/process.hpp"
#include "launcher/supervise/live_console.hpp"
#include <unistd.h>

namespace ddp::launch::supervise {
namespace {

std::unique_ptr<console::ConsoleBoard> make_board() {
  const int fd = os::is_terminal(STDERR_FILENO) ? STDERR_FILENO : os::is_terminal(STDOUT_FILENO) ? STDOUT_FILENO : -1;
  if (fd < 0) return nullptr;
  return std::make_unique<console::ConsoleBoard>(
      fd, [fd] { return os::terminal_columns(fd); }, console::write_all);
}

}  // namespace

LiveConsole::LiveConsole(boost::asio::io_context& io) : timer_(io), board_(make_board()) {}

void LiveConsole::schedule_refresh() {
  if (!board_ || !board_->dirty() || armed_) return;
  armed_ = true;
  timer_.expires_after(kRefresh);
  timer_.async_wait([this](const boost::system::error_code& ec) {
    armed_ = false;
    if (!ec) board_->refresh();
  });
}

}  // namespace ddp::launch::supervise
