#include "launcher/os/fifo_lines.hpp"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::os {
namespace {

constexpr int kPipeBytes = 1 << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw LaunchError(exit_code::kIoError, fmt::format("cannot make the named pipe {}: {}: {}; name a writable path "
                                                     "that is free (TORCHELASTIC_TIMER_FILE) or unset it",
                                                     path, what, std::strerror(err)));
}

int make_and_open(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISFIFO(st.st_mode))
      throw LaunchError(exit_code::kIoError,
                        fmt::format("{} exists and is not a named pipe: ddp-launch will not replace it; remove it or "
                                    "set TORCHELASTIC_TIMER_FILE to another path",
                                    path));
    if (::unlink(path.c_str()) != 0) fail(path, "unlink the old pipe", errno);
  }
  if (::mkfifo(path.c_str(), 0600) != 0) fail(path, "mkfifo", errno);
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    ::unlink(path.c_str());
    fail(path, "open", err);
  }
  return fd;
}

}  // namespace

FifoLines::FifoLines(boost::asio::io_context& loop, std::string path, size_t max_line)
    : path_(std::move(path)), max_line_(max_line), reader_(loop, make_and_open(path_)) {
  own_writer_.reset(::open(path_.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC));  // the read end is open: no ENXIO
  // Room for a burst of requests while the loop is busy: 1 MiB (pipe-max-size's default)
  // instead of 64 KiB; best effort.
  ::fcntl(reader_.native_handle(), F_SETPIPE_SZ, kPipeBytes);
}

FifoLines::~FifoLines() {
  handler_ = nullptr;
  boost::system::error_code ignored;
  reader_.cancel(ignored);
  reader_.close(ignored);
  ::unlink(path_.c_str());
}

void FifoLines::listen(LineHandler handler) {
  handler_ = std::move(handler);
  if (handler_ && !reading_) read();
}

void FifoLines::discard_unread() {
  boost::system::error_code ignored;
  reader_.cancel(ignored);
  std::array<char, 8192> sink;
  while (::read(reader_.native_handle(), sink.data(), sink.size()) > 0) {
  }
  pending_.clear();
  skipping_ = false;
}

void FifoLines::read() {
  reading_ = true;
  reader_.async_read_some(boost::asio::buffer(buf_), [this](const boost::system::error_code& ec, size_t n) {
    reading_ = false;
    if (ec == boost::asio::error::operation_aborted) {  // discard_unread; a handler set since reads on
      if (handler_) read();
      return;
    }
    if (ec || n == 0) return;  // EOF cannot come while own_writer_ is open
    take(n);
    if (handler_) read();
  });
}

void FifoLines::take(size_t n) {
  std::string_view data(buf_.data(), n);
  while (!data.empty()) {
    const size_t nl = data.find('\n');
    const std::string_view part = data.substr(0, nl);
    if (!skipping_) {
      pending_.append(part);
      if (pending_.size() > max_line_) {
        if (handler_) handler_(std::string_view(pending_).substr(0, 80), true);
        pending_.clear();
        skipping_ = nl == std::string_view::npos;
      } else if (nl != std::string_view::npos) {
        if (handler_) handler_(pending_, false);
        pending_.clear();
      }
    } else if (nl != std::string_view::npos) {
      skipping_ = false;
    }
    if (nl == std::string_view::npos) break;
    data.remove_prefix(nl + 1);
  }
}

}  // namespace ddp::launch::os
