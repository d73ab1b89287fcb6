// Multi-process harness for the runtime tests: re-executes this test binary as worker
// processes ("--worker SCENARIO") with the launcher's env contract, on a free port, each
// with a deadline, and collects exit codes and output. Blocking; test-only.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/files.hpp"
#include "tests/support/ports.hpp"
#include "tests/support/processes.hpp"

namespace ddp::test {

struct WorkerResult {
  int exit_code = -1;      // 128+signal when killed; -1 = killed by the harness at the deadline
  std::string output;      // stdout + stderr
  std::string error_file;  // contents of its TORCHELASTIC_ERROR_FILE ("" if none)
};

struct Workers {
  std::vector<WorkerResult> ranks;
  bool all_ok() const;
  std::string describe() const;  // every rank's exit code and output, for failure messages
};

using Env = EnvOverrides;

// Starts `world` workers running SCENARIO with RANK/WORLD_SIZE/MASTER_* set; `env` adds
// variables for all of them. Kills everything still running after `timeout`.
Workers run_workers(const std::string& scenario, int world, const Env& env = {},
                    std::chrono::seconds timeout = std::chrono::seconds(60));

// Starts only the given ranks of a `world`-sized job (to test missing peers).
Workers run_some_workers(const std::string& scenario, int world, const std::vector<int>& ranks, const Env& env,
                         std::chrono::seconds timeout);

// One background process running SCENARIO (single worker); kill it with kill_process, reap
// it with wait_exit_code (processes.hpp).
int start_process(const std::string& scenario, const Env& env, const std::string& output_path);
void kill_process(int pid, int signo);

}  // namespace ddp::test
