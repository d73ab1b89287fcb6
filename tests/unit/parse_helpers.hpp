// Helpers of the option-parsing unit tests: parse a command line that must be valid, or get the
// message of the usage error (exit 121) it, or any call, must raise.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/options.hpp"

namespace ddp::launch::cli::test {

inline LaunchOptions parse(const std::vector<std::string>& args, const Environment& env = {}) {
  auto parsed = parse_command_line(args, env);
  REQUIRE(parsed.options);
  return *parsed.options;
}

// The message of the usage error f() raises (a test failure if it raises none or another).
template <typename F, typename = std::enable_if_t<std::is_invocable_v<F&>>>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const LaunchError& e) {
    CHECK(e.exit_code() == exit_code::kUsage);
    return e.what();
  }
  FAIL("expected a usage error");
  return "";
}

inline std::string usage_error_of(const std::vector<std::string>& args, const Environment& env = {}) {
  return usage_error_of([&] { parse_command_line(args, env); });
}

}  // namespace ddp::launch::cli::test
