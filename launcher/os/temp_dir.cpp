#include "launcher/os/temp_dir.hpp"

#include <stdlib.h>

#include <vector>

namespace ddp::launch::os {

std::optional<std::string> make_temp_dir(const std::string& prefix) {
  std::string pattern = prefix + "XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) return std::nullopt;
  return std::string(buf.data());
}

}  // namespace ddp::launch::os
