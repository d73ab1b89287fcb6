// The one main() of every Catch2 test binary: a registered helper mode (helper_mode.hpp) when
// argv[1] names one, otherwise the Catch2 session. Compiled once, linked by every test binary.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "tests/support/helper_mode.hpp"

int main(int argc, char** argv) {
  if (const auto code = ddp::test::run_helper_mode(argc, argv)) return *code;
  return Catch::Session().run(argc, argv);
}
