#include "launcher/os/this_process.hpp"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::os {

std::optional<std::string> env_value(const std::string& name) {
  const char* value = ::getenv(name.c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

void set_env(const std::string& name, const std::string& value) { ::setenv(name.c_str(), value.c_str(), 1); }

std::string current_dir() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string();
}

bool change_dir(const std::string& path) { return ::chdir(path.c_str()) == 0; }

std::string executable_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw LaunchError(exit_code::kInternalError, "cannot read /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace ddp::launch::os
