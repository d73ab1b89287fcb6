// `ddp-launch --hostfile FILE|--hosts LIST ... PROGRAM`: the launching machine reads the
// host list once, plans every host's agent (hosts/agent_plan), opens one ssh connection
// per remote host, checks ddp-launch is there, then starts one agent per host (the local
// machine's without ssh) with its configuration on stdin, relays their output with host
// prefixes and returns the job's exit code: the first stop signal's (128+N), 124 for a
// host lost first, else the first non-zero in host order. Blocks until every agent ended.
#pragma once

#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"

namespace ddp::launch::remote {

int run_hosts_launch(const cli::LaunchOptions& options, const std::vector<std::string>& args,
                     const cli::Environment& env);

// The path of the running ddp-launch (/proc/self/exe).
std::string this_executable();

// Whether host names this machine: localhost, a loopback address, its host name, or one of
// its interface addresses.
bool is_this_machine(const std::string& host);

}  // namespace ddp::launch::remote
