// One terminal stream fed by many hosts: each line gets its host's prefix; a partial line
// (a progress bar, a '\r' redraw) is written at once, and when another host writes in the
// middle of it, a newline ends it first (its rest later gets the prefix again). Pure: it
// returns the bytes to write. Not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ddp::launch::many_hosts {

class HostOutput {
 public:
  explicit HostOutput(std::vector<std::string> prefixes);
  std::string add(int source, std::string_view chunk);
  std::string finish(int source);  // the source ended: close its open line

 private:
  std::vector<std::string> prefixes_;
  std::vector<bool> at_line_start_;
  std::vector<bool> after_cr_;
  int open_ = -1;  // the source whose line the terminal shows unfinished
};

// "[host] " prefixes, padded to the longest host name so the columns line up.
std::vector<std::string> host_prefixes(const std::vector<std::string>& hosts);

}  // namespace ddp::launch::many_hosts
