// Test helpers that spawn through the launcher's own process code: run a program (the real
// ddp-launch, usually) with a timeout and capture its exit code and output; start one in the
// background (its own session) to signal it. Blocking; for tests only. Also brings in the
// torch-free basics (files, temp dirs, ports, waiting) that need no launcher code.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/support/files.hpp"
#include "tests/support/ports.hpp"
#include "tests/support/processes.hpp"

namespace ddp::test {

struct RunResult {
  int exit_code = -1;  // 128+N when killed by signal N; -1 if it timed out (then killed)
  std::string out;
  std::string err;
  double seconds = 0;
};

// Runs argv with the test's environment plus overrides; kills it after timeout.
RunResult run(const std::vector<std::string>& argv, const EnvOverrides& env = {},
              std::chrono::seconds timeout = std::chrono::seconds(120));

// ddp-launch with these arguments.
RunResult launch(const std::vector<std::string>& args, const EnvOverrides& env = {},
                 std::chrono::seconds timeout = std::chrono::seconds(120));
std::string launcher_path();

// A program running in the background (its own session); output goes to files.
class Background {
 public:
  Background(const std::vector<std::string>& argv, const EnvOverrides& env = {});
  ~Background();  // kills it if still running
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  pid_t pid() const { return pid_; }
  void signal(int signo) const;
  std::string err_so_far() const;                                           // its stderr up to now
  RunResult wait(std::chrono::seconds timeout = std::chrono::seconds(60));  // then reads output

 private:
  TempDir dir_;  // its out and err files
  pid_t pid_ = -1;
  bool done_ = false;
};

}  // namespace ddp::test
