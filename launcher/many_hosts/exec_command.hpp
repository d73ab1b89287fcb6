// `ddp-launch exec --hostfile FILE|--hosts LIST [--include|--exclude F] [--ssh-port N]
// [--ssh-option OPT]... [--ssh-fanout N] -- CMD ARGS`: runs CMD on every host in parallel
// (over ssh; this machine's own entry directly), each line prefixed with its host; exits with
// the first non-zero code in host order. CMD's words are joined and run by the host's shell,
// as ssh does. Its arguments: cli/exec_args.hpp. Blocks.
#pragma once

#include "launcher/cli/environment.hpp"
#include "launcher/cli/exec_args.hpp"

namespace ddp::launch::many_hosts {

int run_exec_command(const cli::ExecArgs& args, const cli::Environment& env);

}  // namespace ddp::launch::many_hosts
