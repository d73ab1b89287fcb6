#include "launcher/os/self_usage.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace ddp::launch::os {
namespace {

double boot_time_s() {
  std::ifstream in("/proc/stat");
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime") {
      in >> value;
      return value;
    }
    in.ignore(1 << 20, '\n');
  }
  return 0;
}

// Field 22 of /proc/self/stat (starttime, in clock ticks after boot); the name in field 2
// may hold spaces, so the fields are counted after its closing parenthesis.
double start_ticks() {
  std::ifstream in("/proc/self/stat");
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = all.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(all.substr(close + 2));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i)
    if (i == 22) return std::stod(field);
  return 0;
}

}  // namespace

SelfUsage self_usage() {
  SelfUsage u;
  rusage r{};
  if (getrusage(RUSAGE_SELF, &r) == 0)
    u.cpu_seconds = static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
                    static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  if (statm >> pages_total >> pages_resident)
    u.resident_bytes = static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
  static const double start = [] {
    try {
      return boot_time_s() + start_ticks() / static_cast<double>(sysconf(_SC_CLK_TCK));
    } catch (...) {  // a /proc we cannot read: no start time (the metric shows 0)
      return 0.0;
    }
  }();
  u.start_time_unix_s = start;
  return u;
}

}  // namespace ddp::launch::os
