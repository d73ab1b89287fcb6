// Runtime test binary: Catch2 runner, or — with "--worker SCENARIO" — one worker process of a
// multi-process test (re-executed by harness.cpp), run under ddp::run like a real trainer.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "ddp/run.hpp"
#include "harness.hpp"

namespace ddp::test {
int run_scenario(const std::string& name);
}

int main(int argc, char** argv) {
  ddp::test::set_self_path(argv[0]);
  if (argc >= 3 && std::string(argv[1]) == "--worker") {
    const std::string scenario = argv[2];
    return ddp::run(argc, argv, [&](int, char**) { return ddp::test::run_scenario(scenario); });
  }
  return Catch::Session().run(argc, argv);
}
