// --print-completion SHELL: a completion script for ddp-launch's long flags (torchrun
// generates its own with the optional shtab package). Pure: the flags are passed in.
// Throws LaunchError(kUsage) for a shell other than bash, zsh or tcsh.
#pragma once

#include <string>
#include <vector>

namespace ddp::launch::cli {

// flags: every long spelling, with its "--". The script completes them while the word
// being typed starts with '-', and file names otherwise (PROGRAM and its arguments).
std::string completion_script(const std::string& shell, const std::vector<std::string>& flags);

}  // namespace ddp::launch::cli
