// `ddp-launch --hostfile FILE|--hosts LIST ... PROGRAM`: the launching machine reads the
// host list once, plans every host's agent (many_hosts/plan/agent_plan), opens one ssh connection
// per remote host, checks ddp-launch is there, then starts one agent per host (the local
// machine's without ssh) with its configuration on stdin, relays their output with host
// prefixes and returns the job's exit code: the first stop signal's (128+N), 124 for a
// host lost first, else the first non-zero in host order. Blocks until every agent ended.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/many_hosts/plan/agent_plan.hpp"
#include "launcher/many_hosts/ssh_command.hpp"

namespace ddp::launch::many_hosts {

// What a many-host launch takes from the command line and this machine's environment,
// resolved once and checked (resolve_hosts_launch.hpp); plain data.
struct HostsLaunchSpec {
  cli::HostsOptions hosts;            // the host list, its filters, --env-forward, --env-file, --remote-launcher
  many_hosts::plan::PlanInputs plan;  // is_local unset: run_hosts_launch asks this machine
  std::optional<int> nproc_count;     // --nproc-per-node N
  bool elastic = false;               // --nnodes MIN:MAX with MIN < MAX
  int nnodes_min = 1, nnodes_max = 1;
  std::map<std::string, std::string> settings;  // PET_*: this machine's flag defaults, for every agent
  SshSettings ssh;
  std::string path_env;                  // where ssh is looked up
  std::vector<std::string> env_entries;  // this machine's environment, NAME=VALUE, for what starts here
  double stop_deadline_s = 60;           // after a stop began, before the agents are SIGKILLed
};

// The ssh settings of --ssh-port, --ssh-option and --ssh-fanout.
SshSettings ssh_settings(const cli::HostsOptions& h);

// args: the launcher's arguments, passed on to every agent as they are.
int run_hosts_launch(const HostsLaunchSpec& spec, const std::vector<std::string>& args, const cli::Environment& env);

// Whether host names this machine: localhost, a loopback address, its host name, or one of
// its interface addresses.
bool is_this_machine(const std::string& host);

}  // namespace ddp::launch::many_hosts
