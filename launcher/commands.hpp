// ddp-launch's commands: the first word of the command line chooses one (cli/command_line),
// its flags are read by CLI11 in cli/, and it runs: a launch (the agent, or a many-host
// launch with --hostfile/--hosts), `status`, `exec` or `__agent`. Returns the exit code
// (exit_status.hpp); errors throw LaunchError, which main alone turns into exit codes. Blocks.
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"

namespace ddp::launch {

// args excludes argv[0]; env: this process's environment, read once.
int run_command_line(const std::vector<std::string>& args, const cli::Environment& env);

}  // namespace ddp::launch
