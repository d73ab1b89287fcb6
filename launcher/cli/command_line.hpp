// Which command a ddp-launch command line runs, told by its first word alone (the table in
// command_line.cpp, as ninja chooses its tools): `status`, `preflight`, `exec`, `__agent` or `__nccl-probe`; anything
// else is a launch, so a program named status runs as ./status or after "--", and a flag
// before the word makes it the program. Each command's flags are then read by CLI11
// (options.hpp, status_args.hpp, exec_args.hpp; errors through cli11_parse.hpp). Pure.
#pragma once

#include <string>
#include <vector>

namespace ddp::launch::cli {

enum class Command {
  kLaunch,     // ddp-launch [OPTIONS] PROGRAM [ARGS...]
  kStatus,     // ddp-launch status TARGET: a terminal view of a job's status
  kPreflight,  // ddp-launch preflight [...]: this node's pre-flight checks, alone
  kExec,       // ddp-launch exec --hosts LIST -- CMD: CMD on every host
  kAgent,      // ddp-launch __agent: one host's agent of a many-host launch (configuration on stdin)
  kNcclProbe,  // ddp-launch __nccl-probe GPUS MIB: the pre-flight NCCL all-reduce (preflight/nccl_check.hpp)
};

struct CommandLine {
  Command command = Command::kLaunch;
  std::vector<std::string> args;  // after the command's word; a launch's: the whole line
};

// args excludes argv[0].
CommandLine split_command(const std::vector<std::string>& args);

}  // namespace ddp::launch::cli
