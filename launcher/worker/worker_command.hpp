// How each worker's command line is built from PROGRAM: an executable runs directly, a .py
// file as `python3 -u FILE` (PYTHON_EXEC overrides python3), -m as `python3 -u -m MODULE`;
// legacy mode inserts --local-rank=N before the user's arguments; ${local_rank} is replaced.
// resolve_worker_command checks the program exists and can run (LaunchError 126/127).
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"

namespace ddp::launch {

// PROGRAM and how to run it, from the command line.
struct WorkerCommandSpec {
  std::string program;                 // script, module or executable
  std::vector<std::string> args;       // everything after PROGRAM
  bool module = false;                 // -m
  bool no_python = false;              // --no-python
  bool legacy_local_rank_arg = false;  // --use-env=false / --legacy-local-rank-arg
};

struct WorkerCommand {
  std::string executable;            // resolved path handed to execve
  std::vector<std::string> prefix;   // argv[0] and interpreter flags, up to and incl. the script
  std::vector<std::string> args;     // the user's arguments (macros not yet replaced)
  bool legacy_local_rank_arg = false;

  std::vector<std::string> argv_for(int local_rank) const;
};

WorkerCommand resolve_worker_command(const WorkerCommandSpec& spec, const Environment& env);

}  // namespace ddp::launch
