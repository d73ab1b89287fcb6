// --include / --exclude in DeepSpeed's syntax: `h1:0,2@h2` names host h1's slots 0 and 2
// and all of h2. Applied to the host list, they give the hosts that run and which of their
// slots each uses (hostfile order kept). Pure; throws LaunchError(kUsage).
#pragma once

#include <string>
#include <vector>

#include "launcher/many_hosts/plan/hostfile.hpp"

namespace ddp::launch::many_hosts::plan {

struct SelectedHost {
  std::string name;
  int slots = 1;              // what the host offers
  std::vector<int> selected;  // the slot indices it uses, ascending
  bool filtered = false;      // some slot was left out: the worker GPUs follow `selected`
};

// include and exclude: "" when not given; both given is an error (as in DeepSpeed). A host
// or slot the list does not have is an error naming it; so is a filter that leaves nothing.
std::vector<SelectedHost> select_hosts(const std::vector<HostEntry>& hosts, const std::string& include,
                                       const std::string& exclude);

}  // namespace ddp::launch::many_hosts::plan
