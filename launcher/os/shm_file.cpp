#include "launcher/os/shm_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include <fmt/format.h>

namespace ddp::launch::os {
namespace {

std::string random_hex() {
  std::random_device rd;  // the kernel's random source: 128 bits, not guessable
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

// The PID in NAME = PREFIX-PID-..., or -1.
long pid_in_name(const std::string& name, const std::string& prefix) {
  if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size(), prefix) != 0 || name[prefix.size()] != '-')
    return -1;
  const char* digits = name.c_str() + prefix.size() + 1;
  char* end = nullptr;
  errno = 0;
  const long pid = std::strtol(digits, &end, 10);
  if (errno != 0 || end == digits || *end != '-' || pid <= 0) return -1;
  return pid;
}

}  // namespace

ShmFileResult create_private_shm_file(const std::string& dir, const std::string& prefix, const std::string& tag) {
  ShmFileResult r;
  for (int tries = 0; tries < 3; ++tries) {
    const std::string path = fmt::format("{}/{}-{}-{}-{}", dir, prefix, ::getpid(), random_hex(), tag);
    const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) {
      ::close(fd);
      r.path = path;
      return r;
    }
    if (errno != EEXIST) {
      r.error = fmt::format("cannot create {}: {}", path, std::strerror(errno));
      return r;
    }
  }
  r.error = fmt::format("cannot create a file in {}: every name tried exists", dir);
  return r;
}

namespace {

// DIR/PREFIX-PID-* entries of this user whose launcher PID no longer runs: regular files, or
// (`directories`) folders with what they hold.
int sweep_orphans(const std::string& dir, const std::string& prefix, bool directories) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return 0;
  int removed = 0;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const long pid = pid_in_name(name, prefix);
    if (pid < 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    const std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || st.st_uid != ::getuid()) continue;
    if (directories ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) continue;
    std::error_code ec;
    if (directories ? std::filesystem::remove_all(path, ec) > 0 : ::unlink(path.c_str()) == 0) ++removed;
  }
  ::closedir(d);
  return removed;
}

}  // namespace

int sweep_orphaned_shm_files(const std::string& dir, const std::string& prefix) {
  return sweep_orphans(dir, prefix, false);
}

int sweep_orphaned_dirs(const std::string& dir, const std::string& prefix) { return sweep_orphans(dir, prefix, true); }

std::optional<unsigned long long> free_bytes(const std::string& dir) {
  struct statvfs s {};
  if (::statvfs(dir.c_str(), &s) != 0) return std::nullopt;
  return static_cast<unsigned long long>(s.f_bavail) * s.f_frsize;
}

}  // namespace ddp::launch::os
