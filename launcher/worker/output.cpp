

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/console/console_board.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/worker/output.hpp"
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <unistd.h>

namespace ddp::launch::worker {

void LineSplitter::feed(std::string_view data, const Sink& sink) {
  while (!data.empty()) {
    if (carriage_return_) {
      carriage_return_ = false;
      if (data[0] != '\n') partial_.clear();  // a lone '\r': the line starts over
    }
    const size_t end = data.find_first_of("\r\n");
    append_bounded(data.substr(0, end), sink);
    if (end == std::string_view::npos) return;
    if (data[end] == '\n') {
      partial_.push_back('\n');
      sink(partial_);
      partial_.clear();
    } else {
      carriage_return_ = true;  // decided by the next byte: "\r\n" or a redraw
    }
    data.remove_prefix(end + 1);
  }
}

void LineSplitter::append_bounded(std::string_view text, const Sink& sink) {
  while (partial_.size() + text.size() > kMaxLineBytes) {
    size_t take = kMaxLineBytes - partial_.size();
    // Back up to a UTF-8 character start (at most 3 continuation bytes).
    for (size_t back = 0;
         back < 3 && take > 0 && take < text.size() && (static_cast<unsigned char>(text[take]) & 0xc0) == 0x80; ++back)
      --take;
    partial_.append(text.substr(0, take));
    partial_.push_back('\n');
    sink(partial_);
    partial_.clear();
    text.remove_prefix(take);
  }
  partial_.append(text);
}

void LineSplitter::flush(const Sink& sink) {
  carriage_return_ = false;
  if (partial_.empty()) return;
  partial_.push_back('\n');
  sink(partial_);
  partial_.clear();
}

std::string expand_prefix_template(const std::string& tmpl, int rank, int local_rank, const std::string& role,
                                   const std::string& hostname) {
  const std::pair<std::string, std::string> macros[] = {{"${rank}", std::to_string(rank)},
                                                        {"${local_rank}", std::to_string(local_rank)},
                                                        {"${role_name}", role},
                                                        {"${hostname}", hostname}};
  std::string out;
  for (size_t i = 0; i < tmpl.size();) {
    bool replaced = false;
    for (const auto& [name, value] : macros) {
      if (tmpl.compare(i, name.size(), name) == 0) {
        out += value;
        i += name.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += tmpl[i++];
  }
  return out;
}

bool matches_any(std::string_view line, const std::vector<std::string>& filters) {
  for (const std::string& f : filters)
    if (line.find(f) != std::string_view::npos) return true;
  return false;
}

DuplicateLog::DuplicateLog(std::vector<std::string> filters, os::UniqueFd file)
    : filters_(std::move(filters)), file_(std::move(file)) {}

void DuplicateLog::offer(std::string_view prefix, std::string_view line) {
  if (!file_.valid() || !matches_any(line, filters_)) return;
  std::string out(prefix);
  out += line;
  console::write_all(file_.get(), out);
}

WorkerStream::WorkerStream(std::string prefix, int console_fd, os::UniqueFd log_file, console::ConsoleBoard* board,
                           int slot, std::shared_ptr<DuplicateLog> duplicate)
    : prefix_(std::move(prefix)),
      console_fd_(console_fd),
      log_file_(std::move(log_file)),
      board_(console_fd >= 0 ? board : nullptr),
      slot_(slot),
      duplicate_(std::move(duplicate)) {}

void WorkerStream::consume(std::string_view data) {
  if (log_file_.valid()) console::write_all(log_file_.get(), data);
  splitter_.feed(data, [this](std::string_view line) { emit(line); });
  write_pending();
  if (board_) {  // the unfinished line, drawn at the board's next refresh
    std::string_view live = splitter_.partial();
    board_->set_live(slot_, live.empty() ? std::string() : prefix_ + std::string(live));
  }
}

void WorkerStream::finish() {
  splitter_.flush([this](std::string_view line) { emit(line); });
  write_pending();
  if (board_) board_->set_live(slot_, "");
}

void WorkerStream::write_pending() {
  if (pending_.empty()) return;
  if (board_) {
    board_->set_live(slot_, "");  // the line it showed is among the complete ones now
    board_->write_lines(console_fd_, pending_);
  } else {
    console::write_all(console_fd_, pending_);
  }
  pending_.clear();
}

void WorkerStream::emit(std::string_view line) {
  if (tail_.size() == kTailLines) tail_.pop_front();
  tail_.emplace_back(line.substr(0, std::min<size_t>(line.size() - 1, 1024)));  // without the '\n'
  if (duplicate_) duplicate_->offer(prefix_, line);
  if (console_fd_ < 0) return;
  pending_ += prefix_;
  pending_ += line;
}

os::UniqueFd open_log_file(const std::string& path) {
  std::error_code ec;  // a directory that cannot be made makes open() fail, which says why
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw LaunchError(exit_code::kIoError, fmt::format("cannot write log file {}: {}; check that --log-dir (or TMPDIR) "
                                                       "is a writable directory with free space",
                                                       path, std::strerror(errno)));
  return os::UniqueFd(fd);
}

}  // namespace ddp::launch::worker
