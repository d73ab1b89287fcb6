// Helper modes: a test binary re-executes itself as a helper process (`BINARY --FLAG ...`,
// e.g. a runtime worker or a store client to kill -9). A test file registers its mode with a
// namespace-scope `const HelperMode`; catch_main's main() runs the mode whose flag is argv[1]
// instead of Catch2. Registration happens during static initialisation; not thread-safe.
#pragma once

#include <optional>

namespace ddp::test {

using HelperMain = int (*)(int argc, char** argv);  // argv[1] is the flag; returns the exit code

struct HelperMode {
  HelperMode(const char* flag, HelperMain main);
};

// The registered mode's exit code if argv[1] names one, else nullopt (then run Catch2).
std::optional<int> run_helper_mode(int argc, char** argv);

}  // namespace ddp::test
