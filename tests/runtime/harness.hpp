// Multi-process harness for the runtime tests: re-executes this test binary as worker
// processes ("--worker SCENARIO") with the launcher's env contract, on a free port, each
// with a deadline, and collects exit codes and output. Blocking; test-only.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace ddp::test {

struct WorkerResult {
  int exit_code = -1;  // 128+signal when killed; -1 = killed by the harness at the deadline
  std::string output;  // stdout + stderr
  std::string error_file;  // contents of its TORCHELASTIC_ERROR_FILE ("" if none)
};

struct Workers {
  std::vector<WorkerResult> ranks;
  bool all_ok() const;
  std::string describe() const;  // every rank's exit code and output, for failure messages
};

using Env = std::map<std::string, std::string>;

// A fresh temporary directory, removed at process exit.
std::string make_temp_dir();
std::string read_file(const std::string& path);

// Starts `world` workers running SCENARIO with RANK/WORLD_SIZE/MASTER_* set; `env` adds
// variables for all of them. Kills everything still running after `timeout`.
Workers run_workers(const std::string& scenario, int world, const Env& env = {},
                    std::chrono::seconds timeout = std::chrono::seconds(60));

// Starts only the given ranks of a `world`-sized job (to test missing peers).
Workers run_some_workers(const std::string& scenario, int world, const std::vector<int>& ranks, const Env& env,
                         std::chrono::seconds timeout);

// One background process running SCENARIO (single worker); kill it with kill_process.
int start_process(const std::string& scenario, const Env& env, const std::string& output_path);
void kill_process(int pid, int signo);
int wait_process(int pid, std::chrono::seconds timeout);

// argv[0] saved by main() so workers can re-execute the binary.
void set_self_path(const std::string& path);
int free_port();

}  // namespace ddp::test
