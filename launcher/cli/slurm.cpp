#include "launcher/cli/slurm.hpp"

#include <limits>

#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

[[noreturn]] void bad_list(const std::string& list) {
  usage_error(fmt::format("cannot read the Slurm node list '{}'; pass --master-addr explicitly", list));
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

// A Slurm count variable (SLURM_NNODES, SLURM_NODEID) as an int; nullopt if unset or not one.
std::optional<int> slurm_count(const Environment& env, const std::string& key) {
  auto value = lookup(env, key);
  auto n = value ? parse_natural(*value) : std::nullopt;
  if (!n || *n > std::numeric_limits<int>::max()) return std::nullopt;
  return static_cast<int>(*n);
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
    for (const auto& range : split(ranges, ',')) {
      auto bounds = split(range, '-');  // "7" or "01-03"
      auto lo = parse_natural(bounds.front());
      auto hi = parse_natural(bounds.back());
      if (bounds.size() > 2 || !lo || !hi || *lo > *hi || *hi - *lo > 100000) bad_list(nodelist);
      for (long long n = *lo; n <= *hi; ++n)
        hosts.push_back(prefix + fmt::format("{:0{}}", n, bounds.front().size()) + suffix);
    }
  }
  if (hosts.empty()) bad_list(nodelist);
  return hosts;
}

std::optional<SlurmJob> slurm_job(const Environment& env) {
  // Inside a step (srun) the step's variables come first: a step may run on part of the
  // allocation (srun -N2 -w n2,n3 in a three-node job), and SLURM_NODEID counts the step's
  // nodes, while SLURM_JOB_NODELIST still lists the whole allocation.
  auto nnodes = slurm_count(env, "SLURM_STEP_NUM_NODES");
  if (!nnodes) nnodes = slurm_count(env, "SLURM_NNODES");
  auto node_id = slurm_count(env, "SLURM_NODEID");
  auto list = lookup(env, "SLURM_STEP_NODELIST");
  if (!list) list = lookup(env, "SLURM_JOB_NODELIST");
  if (!list) list = lookup(env, "SLURM_NODELIST");
  if (!nnodes || !node_id || !list) return std::nullopt;
  SlurmJob job;
  job.nnodes = *nnodes;
  job.node_rank = *node_id;
  job.first_host = expand_nodelist(*list).front();
  return job;
}

}  // namespace ddp::launch::cli
