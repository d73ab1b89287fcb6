// `ddp-launch exec --hostfile FILE|--hosts LIST [--include|--exclude F] [--ssh-port N]
// [--ssh-option OPT]... [--ssh-fanout N] -- CMD ARGS`: its arguments, read by CLI11 with the
// launch's own host-list flags (host_flags.hpp); what the command does:
// many_hosts/exec_command.hpp. Pure; errors, and -h/--help, throw LaunchError(kUsage) with the
// usage line.
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/host_flags.hpp"

namespace ddp::launch::cli {

inline constexpr const char* kExecUsage =
    "usage: ddp-launch exec --hostfile FILE|--hosts H1[:N],... [--include|--exclude FILTER] [--ssh-port N] "
    "[--ssh-option OPT]... [--ssh-fanout N] -- CMD [ARGS...]";

struct ExecArgs {
  HostsOptions hosts;                // the host list, its filters, ssh
  std::vector<std::string> command;  // CMD and its arguments, joined by the hosts' shells
};

// args: what follows "exec". CMD starts at the first word that is no flag, or after "--".
ExecArgs parse_exec_args(const std::vector<std::string>& args);

}  // namespace ddp::launch::cli
