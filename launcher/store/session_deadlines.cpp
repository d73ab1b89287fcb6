// Session's deadlines (session.hpp): the read deadline of a half-received frame (and of the
// HELLO), the write deadline of a reply the peer does not take, the heartbeat.
#include <fmt/format.h>

#include "launcher/store/session.hpp"

namespace ddp::launch::store {

using Clock = boost::asio::steady_timer::clock_type;

// A deadline runs only while a frame is half received (and, before HELLO, always).
void Session::update_read_deadline() {
  if (state_ == State::kHandshake) return;
  if (decoder_.mid_frame() && !read_deadline_armed_) {
    read_deadline_.expires_after(shared_.options.read_timeout);
    read_deadline_armed_ = true;
  } else if (!decoder_.mid_frame() && read_deadline_armed_) {
    read_deadline_.expires_at(Clock::time_point::max());
    read_deadline_armed_ = false;
  }
}

// The three watchers follow Asio's timeouts example: one wait always pending, re-armed by
// moving the expiry; a completion acts only if the expiry has really passed.
void Session::watch_read_deadline() {
  auto self = shared_from_this();
  read_deadline_.async_wait([this, self](boost::system::error_code) {
    if (state_ == State::kClosed) return;
    if (read_deadline_.expiry() > Clock::now()) return watch_read_deadline();
    if (state_ == State::kReady && !reading_) {  // we paused reading (backlog): not the peer's fault
      read_deadline_.expires_after(shared_.options.read_timeout);
      return watch_read_deadline();
    }
    const auto ms = shared_.options.read_timeout.count();
    close(state_ == State::kHandshake ? fmt::format("no HELLO within {} ms", ms)
                                      : fmt::format("read deadline: frame not finished within {} ms", ms));
  });
}

void Session::watch_write_deadline() {
  auto self = shared_from_this();
  write_deadline_.async_wait([this, self](boost::system::error_code) {
    if (state_ == State::kClosed) return;
    if (write_deadline_.expiry() > Clock::now()) return watch_write_deadline();
    close(fmt::format("write deadline: reply not taken within {} ms", shared_.options.write_timeout.count()));
  });
}

void Session::watch_heartbeat() {
  auto self = shared_from_this();
  heartbeat_.async_wait([this, self](boost::system::error_code) {
    if (state_ == State::kClosed) return;
    if (heartbeat_.expiry() > Clock::now()) return watch_heartbeat();
    close(fmt::format("no heartbeat for {} ms", heartbeat_ms_));
  });
}

}  // namespace ddp::launch::store
