#include "tests/support/helper_mode.hpp"

#include <map>
#include <string>

namespace ddp::test {
namespace {
std::map<std::string, HelperMain>& modes() {
  static std::map<std::string, HelperMain> registered;
  return registered;
}
}  // namespace

HelperMode::HelperMode(const char* flag, HelperMain main) { modes()[flag] = main; }

std::optional<int> run_helper_mode(int argc, char** argv) {
  if (argc < 2) return std::nullopt;
  const auto it = modes().find(argv[1]);
  if (it == modes().end()) return std::nullopt;
  return it->second(argc, argv);
}

}  // namespace ddp::test
