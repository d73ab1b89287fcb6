#include "launcher/worker/output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch {

void LineSplitter::feed(std::string_view data, const Sink& sink) {
  while (!data.empty()) {
    size_t nl = data.find('\n');
    if (nl == std::string_view::npos) {
      partial_.append(data);
      return;
    }
    if (partial_.empty()) {
      sink(data.substr(0, nl + 1));
    } else {
      partial_.append(data.substr(0, nl + 1));
      sink(partial_);
      partial_.clear();
    }
    data.remove_prefix(nl + 1);
  }
}

void LineSplitter::flush(const Sink& sink) {
  if (partial_.empty()) return;
  partial_.push_back('\n');
  sink(partial_);
  partial_.clear();
}

std::string expand_prefix_template(const std::string& tmpl, int rank, int local_rank,
                                   const std::string& role) {
  const std::pair<std::string, std::string> macros[] = {
      {"${rank}", std::to_string(rank)},
      {"${local_rank}", std::to_string(local_rank)},
      {"${role_name}", role}};
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

WorkerStream::WorkerStream(std::string prefix, int console_fd, UniqueFd log_file)
    : prefix_(std::move(prefix)), console_fd_(console_fd), log_file_(std::move(log_file)) {}

void WorkerStream::consume(std::string_view data) {
  if (log_file_.valid()) write_all(log_file_.get(), data);
  splitter_.feed(data, [this](std::string_view line) { emit(line); });
  if (!pending_.empty()) {
    write_all(console_fd_, pending_);
    pending_.clear();
  }
}

void WorkerStream::finish() {
  splitter_.flush([this](std::string_view line) { emit(line); });
  if (!pending_.empty()) {
    write_all(console_fd_, pending_);
    pending_.clear();
  }
}

void WorkerStream::emit(std::string_view line) {
  if (tail_.size() == kTailLines) tail_.pop_front();
  tail_.emplace_back(line.substr(0, line.size() - 1));  // without the '\n'
  if (console_fd_ < 0) return;
  pending_ += prefix_;
  pending_ += line;
}

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

void launcher_notice(const std::string& text) { write_all(STDERR_FILENO, "ddp-launch: " + text + "\n"); }

UniqueFd open_log_file(const std::string& path) {
  std::error_code ec;  // a directory that cannot be made makes open() fail, which says why
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw LaunchError(exit_code::kIoError,
                      fmt::format("cannot write log file {}: {}; check that --log-dir (or TMPDIR) "
                                  "is a writable directory with free space",
                                  path, std::strerror(errno)));
  return UniqueFd(fd);
}

}  // namespace ddp::launch
