// The host list of a many-host launch: a hostfile in DeepSpeed's (`host slots=4`), MPI's
// (`host slots=4 max_slots=8`) or Horovod's (`host:4`) format, with `#` comments and blank
// lines, or the --hosts list (`h1:4,h2:4`); IPv6 addresses as host_item reads them
// (`[fd00::2]:4`, `[fd00::2] slots=4`, `fd00::2 slots=4`). Pure; throws LaunchError(kUsage) naming the
// file and line, the text, and what to write instead.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ddp::launch::many_hosts::plan {

struct HostEntry {
  std::string name;  // as written (an IPv6 address without brackets): used for ssh and the rendezvous
  int slots = 1;     // workers (GPUs) it offers; 1 when the line gives none
  int line = 0;      // 1-based line in the hostfile (0: from --hosts)
};

// text: the whole file; source: its name for errors. An empty list (only comments) is an error.
std::vector<HostEntry> parse_hostfile(std::string_view text, const std::string& source);

// --hosts h1:4,h2,h3:2 (a bare host offers 1 slot).
std::vector<HostEntry> parse_host_list(std::string_view text);

}  // namespace ddp::launch::many_hosts::plan
