#include "launcher/many_hosts/host_list.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/many_hosts/plan/hostfile.hpp"

namespace ddp::launch::many_hosts {

std::string read_text_file(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  if (!in)
    throw LaunchError(exit_code::kUsage, fmt::format("{} {}: cannot read it ({}); give a readable file", what, path,
                                                     std::strerror(errno)));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<many_hosts::plan::SelectedHost> read_host_list(const std::string& hostfile, const std::string& host_list,
                                                           const std::string& include, const std::string& exclude) {
  if (!hostfile.empty() && !host_list.empty())
    throw LaunchError(exit_code::kUsage, "--hostfile and --hosts both name the hosts; give one of them");
  const std::vector<many_hosts::plan::HostEntry> entries =
      hostfile.empty() ? many_hosts::plan::parse_host_list(host_list)
                       : many_hosts::plan::parse_hostfile(read_text_file(hostfile, "--hostfile"), hostfile);
  return many_hosts::plan::select_hosts(entries, include, exclude);
}

}  // namespace ddp::launch::many_hosts
