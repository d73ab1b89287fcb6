#include "launcher/os/durable_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

namespace ddp::launch::os {
namespace {

std::string parent_of(const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path().string();
  return parent.empty() ? "." : parent;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fmt::format("cannot open {}: {}", dir, std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? "" : fmt::format("cannot fsync {}: {}", dir, std::strerror(err));
}

}  // namespace

std::string write_file_durably(const std::string& temp_path, const std::string& path, std::string_view data) {
  const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("cannot create {}: {}", temp_path, std::strerror(errno));
  std::string error;
  if (!write_all(fd, data)) error = fmt::format("cannot write {}: {}", temp_path, std::strerror(errno ? errno : EIO));
  else if (::fsync(fd) != 0) error = fmt::format("cannot fsync {}: {}", temp_path, std::strerror(errno));
  if (::close(fd) != 0 && error.empty()) error = fmt::format("cannot write {}: {}", temp_path, std::strerror(errno));
  if (error.empty() && ::rename(temp_path.c_str(), path.c_str()) != 0)
    error = fmt::format("cannot rename {} to {}: {}", temp_path, path, std::strerror(errno));
  if (!error.empty()) {
    ::unlink(temp_path.c_str());
    return error;
  }
  return fsync_dir(parent_of(path));
}

std::string prepare_writable_dir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fmt::format("cannot create the folder {}: {}", dir, ec.message());
  if (!std::filesystem::is_directory(dir, ec)) return fmt::format("{} is not a folder", dir);
  const std::string probe = fmt::format("{}/.ddp-launch-probe-{}", dir, ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return fmt::format("cannot create a file in {}: {}", dir, std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

}  // namespace ddp::launch::os
