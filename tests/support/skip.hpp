// Ending a test case as skipped where something it needs is missing (a binary, root, a
// kernel feature): a line on stderr saying why, then exit code 77, which CTest reports as
// skipped for tests registered with SKIP_RETURN_CODE 77. Catch2 v2 cannot skip a case, so
// the process ends: call it before the case starts anything that must be cleaned up (no
// destructor runs). Each CTest entry runs one case, so no other case is lost.
#pragma once

#include <string>

namespace ddp::test {

inline constexpr int kSkipExitCode = 77;

[[noreturn]] void skip_test(const std::string& why);

// The path of the executable `name` on PATH (then /usr/bin, /usr/local/bin); "" if none.
std::string find_binary(const std::string& name);

// Skips the case unless find_binary(name) finds it; the message names the Debian package
// (scripts/install-deps.sh installs it).
void require_binary(const std::string& name, const std::string& debian_package);

}  // namespace ddp::test
