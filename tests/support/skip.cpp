#include "tests/support/skip.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace ddp::test {

void skip_test(const std::string& why) {
  std::fprintf(stderr, "skipped: %s\n", why.c_str());
  std::fflush(nullptr);
  std::_Exit(kSkipExitCode);
}

std::string find_binary(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = std::string(path ? path : "") + ":/usr/bin:/usr/local/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string candidate = dirs.substr(start, end - start) + "/" + name;
    if (end > start && ::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = end + 1;
  }
  return "";
}

void require_binary(const std::string& name, const std::string& debian_package) {
  if (find_binary(name).empty())
    skip_test("no " + name + " binary on PATH (Debian: apt-get install " + debian_package + ")");
}

}  // namespace ddp::test
