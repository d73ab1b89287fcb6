// How each worker's command line is built from PROGRAM: an executable runs directly, a .py
// file as `python3 -u FILE` (PYTHON_EXEC overrides python3), -m as `python3 -u -m MODULE`;
// --run-path runs any FILE with python; legacy mode inserts --local_rank=N (or the 2.x
// spelling --local-rank=N) before the user's arguments; ${local_rank} is replaced.
// resolve_worker_command checks the program exists and can run (LaunchError 126/127).
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::worker {

// PROGRAM and how to run it, from the command line.
struct WorkerCommandSpec {
  std::string program;            // script, module or executable
  std::vector<std::string> args;  // everything after PROGRAM
  bool module = false;            // -m
  bool no_python = false;         // --no-python
  bool run_path = false;          // --run-path: FILE through python, whatever its name
  std::string local_rank_flag;    // "--local_rank" / "--local-rank" before args; "": none
};

struct WorkerCommand {
  std::string executable;           // resolved path handed to execve
  std::vector<std::string> prefix;  // argv[0] and interpreter flags, up to and incl. the script
  std::vector<std::string> args;    // the user's arguments (macros not yet replaced)
  std::string local_rank_flag;      // "": no local-rank argument

  std::vector<std::string> argv_for(int local_rank) const;
};

WorkerCommand resolve_worker_command(const WorkerCommandSpec& spec, const cli::Environment& env);

// The Python interpreter a job runs (PYTHON_EXEC, else python3, found on PATH); throws
// LaunchError (127, 126) as resolve_program does.
std::string resolve_python(const cli::Environment& env);

}  // namespace ddp::launch::worker
