// `ddp-launch exec --hostfile FILE|--hosts LIST [--include|--exclude F] [--ssh-port N]
// [--ssh-option OPT]... [--ssh-fanout N] -- CMD ARGS`: runs CMD on every host in parallel
// (over ssh; this machine's own entry directly), each line prefixed with its host; exits with
// the first non-zero code in host order. CMD's words are joined and run by the host's shell,
// as ssh does. Blocks.
#pragma once

#include <string>
#include <vector>

namespace ddp::launch::remote {

int run_exec_command(const std::vector<std::string>& args);

}  // namespace ddp::launch::remote
