#include "launcher/cli/slurm.hpp"

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch {
namespace {

[[noreturn]] void bad_list(const std::string& list) {
  throw LaunchError(exit_code::kUsage, fmt::format("cannot read the Slurm node list '{}'; pass "
                                                   "--master-addr explicitly",
                                                   list));
}

// Splits on commas that are not inside brackets.
std::vector<std::string> split_top_level(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

std::vector<std::string> expand_nodelist(const std::string& nodelist) {
  std::vector<std::string> hosts;
  for (const auto& item : split_top_level(nodelist)) {
    auto open = item.find('[');
    if (open == std::string::npos) {
      if (item.find(']') != std::string::npos) bad_list(nodelist);
      hosts.push_back(item);
      continue;
    }
    auto close = item.find(']', open);
    if (close == std::string::npos || item.find('[', open + 1) != std::string::npos) bad_list(nodelist);
    std::string prefix = item.substr(0, open);
    std::string suffix = item.substr(close + 1);
    std::string ranges = item.substr(open + 1, close - open - 1);
    size_t start = 0;
    while (start <= ranges.size()) {
      size_t end = ranges.find(',', start);
      if (end == std::string::npos) end = ranges.size();
      std::string range = ranges.substr(start, end - start);
      auto dash = range.find('-');
      std::string lo = range.substr(0, dash);
      std::string hi = dash == std::string::npos ? lo : range.substr(dash + 1);
      if (!all_digits(lo) || !all_digits(hi) || std::stoll(lo) > std::stoll(hi) ||
          std::stoll(hi) - std::stoll(lo) > 100000)
        bad_list(nodelist);
      for (long long n = std::stoll(lo); n <= std::stoll(hi); ++n)
        hosts.push_back(prefix + fmt::format("{:0{}}", n, lo.size()) + suffix);
      start = end + 1;
    }
  }
  if (hosts.empty()) bad_list(nodelist);
  return hosts;
}

std::optional<SlurmJob> slurm_job(const Environment& env) {
  auto nnodes = lookup(env, "SLURM_NNODES");
  auto node_id = lookup(env, "SLURM_NODEID");
  auto list = lookup(env, "SLURM_JOB_NODELIST");
  if (!list) list = lookup(env, "SLURM_NODELIST");
  if (!nnodes || !node_id || !list || !all_digits(*nnodes) || !all_digits(*node_id)) return std::nullopt;
  SlurmJob job;
  job.nnodes = std::stoi(*nnodes);
  job.node_rank = std::stoi(*node_id);
  job.first_host = expand_nodelist(*list).front();
  return job;
}

}  // namespace ddp::launch
