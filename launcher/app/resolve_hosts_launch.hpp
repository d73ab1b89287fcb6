// The one place where the command line becomes what a many-host launch needs on the
// launching machine (many_hosts/hosts_launch.hpp): the host flags' cross-checks (cli/host_checks),
// the plan's inputs, the ssh settings, the PET_* settings passed to every agent. Pure: the
// host list itself is read later, by run_hosts_launch. Throws LaunchError(kUsage).
#pragma once

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/many_hosts/hosts_launch.hpp"

namespace ddp::launch {

many_hosts::HostsLaunchSpec resolve_hosts_launch(const cli::LaunchOptions& options, const cli::Environment& env);

}  // namespace ddp::launch
