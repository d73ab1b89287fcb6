// ddp_runtime_tests' helper mode `--worker SCENARIO`: one worker process of a multi-process
// test (re-executed by harness.cpp), run under ddp::run like a real trainer.
#include <string>

#include "ddp/run.hpp"
#include "tests/support/helper_mode.hpp"

namespace ddp::test {
int run_scenario(const std::string& name);
}

namespace {

int worker(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string scenario = argv[2];
  return ddp::run(argc, argv, [&](int, char**) { return ddp::test::run_scenario(scenario); });
}

const ddp::test::HelperMode kWorker("--worker", worker);

}  // namespace
