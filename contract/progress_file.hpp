// The progress record's file (progress_record.hpp): creating a zeroed one for a worker to
// map, and reading one back. The only code that reads record files: the launcher's progress
// monitor and the runtime's tests use it. Header-only, POSIX only, no dependencies; each
// call opens, reads or writes 128 bytes and closes (does not block beyond that).
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "contract/progress_record.hpp"

namespace ddp::progress {

// The record in `path`; nullopt if the file is absent, short, or not yet initialised by the
// worker (magic or version not set).
inline std::optional<Record> read_record_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  Record r{};
  const ssize_t n = ::pread(fd, &r, sizeof r, 0);
  ::close(fd);
  if (n != static_cast<ssize_t>(sizeof r) || r.magic != kMagic || r.version != kVersion) return std::nullopt;
  return r;
}

// The record's features field (kFeature* bits), initialised or not: a worker may show a
// feature before it feeds anything else (ddp_standby.point()). 0 when the file is absent or short.
inline uint32_t read_record_features(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  uint32_t features = 0;
  const ssize_t n = ::pread(fd, &features, sizeof features, offsetof(Record, features));
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof features) ? features : 0;
}

// Creates (or empties) `path` as a zeroed record. Returns 0, or the errno of what failed.
inline int create_record_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  const Record zero{};
  const ssize_t n = ::write(fd, &zero, sizeof zero);
  const int err = n == static_cast<ssize_t>(sizeof zero) ? 0 : n < 0 ? errno : ENOSPC;
  ::close(fd);
  return err;
}

}  // namespace ddp::progress
