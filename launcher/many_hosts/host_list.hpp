// The host list a command line names: --hostfile FILE (read here) or --hosts LIST (one of
// them), narrowed by --include / --exclude. Throws LaunchError(kUsage) naming the file.
#pragma once

#include <string>
#include <vector>

#include "launcher/many_hosts/plan/resource_filter.hpp"

namespace ddp::launch::many_hosts {

std::vector<many_hosts::plan::SelectedHost> read_host_list(const std::string& hostfile, const std::string& host_list,
                                                           const std::string& include, const std::string& exclude);

// A whole file's text; LaunchError(kUsage) naming what and why when it cannot be read.
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace ddp::launch::many_hosts
