#include "launcher/os/fd_io.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace ddp::launch::os {

ssize_t read_some(int fd, char* buf, size_t size) { return ::read(fd, buf, size); }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

UniqueFd open_append(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
}

}  // namespace ddp::launch::os
