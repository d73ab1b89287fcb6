// The open-file limit and the backlog cap; see open_files.hpp.
#include "launcher/net/open_files.hpp"

#include <sys/resource.h>

#include <cstdint>
#include <fstream>

namespace ddp::launch::net {

size_t raise_open_file_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? SIZE_MAX : static_cast<size_t>(rl.rlim_cur);
}

std::optional<size_t> somaxconn() {
  std::ifstream in("/proc/sys/net/core/somaxconn");
  size_t value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

std::string backlog_warning(std::optional<size_t> somaxconn, size_t at_once, const std::string& what) {
  if (!somaxconn || *somaxconn >= at_once) return "";
  const std::string wanted = std::to_string(at_once);
  return "net.core.somaxconn is " + std::to_string(*somaxconn) + ", below the " + wanted + " " + what +
         ": connections beyond it wait for the kernel to retry them (a second or more each); sysctl -w "
         "net.core.somaxconn=" +
         wanted + " on this host avoids that";
}

}  // namespace ddp::launch::net
