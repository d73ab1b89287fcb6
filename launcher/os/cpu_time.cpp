#include "launcher/os/cpu_time.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>

namespace ddp::launch::os {
namespace {

struct StatFields {
  long pgrp = 0;
  uint64_t cpu_ticks = 0;
};

// /proc/PID/stat: "pid (comm) state ppid pgrp ... utime(14) stime(15) ...". comm may hold
// spaces and parentheses: fields are counted from the last ')'.
bool read_stat(const char* pid, StatFields& out) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%s/stat", pid);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  char* p = std::strrchr(buf, ')');
  if (!p) return false;
  ++p;  // fields from 3 (state) on, separated by single spaces
  uint64_t utime = 0;
  for (int field = 3; field <= 15 && *p; ++field) {
    while (*p == ' ') ++p;
    char* end = p;
    while (*end && *end != ' ') ++end;
    if (field == 5) out.pgrp = std::strtol(p, nullptr, 10);
    if (field == 14) utime = std::strtoull(p, nullptr, 10);
    if (field == 15) {
      out.cpu_ticks = utime + std::strtoull(p, nullptr, 10);
      return true;
    }
    p = end;
  }
  return false;
}

}  // namespace

std::map<long, uint64_t> process_group_cpu_ticks(const std::set<long>& groups) {
  std::map<long, uint64_t> ticks;
  for (long g : groups) ticks[g] = 0;
  if (groups.empty()) return ticks;
  DIR* proc = ::opendir("/proc");
  if (!proc) return ticks;
  while (dirent* e = ::readdir(proc)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    StatFields f;
    if (read_stat(e->d_name, f) && groups.count(f.pgrp)) ticks[f.pgrp] += f.cpu_ticks;
  }
  ::closedir(proc);
  return ticks;
}

}  // namespace ddp::launch::os
