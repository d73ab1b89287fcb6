#include "launcher/many_hosts/plan/resource_filter.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"
#include "launcher/many_hosts/plan/host_item.hpp"

namespace ddp::launch::many_hosts::plan {
namespace {

[[noreturn]] void bad(const std::string& flag, const std::string& value, const std::string& problem) {
  throw LaunchError(
      exit_code::kUsage,
      fmt::format(
          "{} '{}': {}; write HOST[:SLOT,SLOT...]@HOST... such as h1:0,2@h2 (an IPv6 address in brackets: [fd00::2]:0,1)",
          flag, value, problem));
}

// host -> the slots named (nullopt: the whole host).
using Filter = std::map<std::string, std::optional<std::set<int>>>;

Filter parse_filter(const std::string& flag, const std::string& value, const std::vector<HostEntry>& hosts) {
  Filter filter;
  for (const std::string& raw : split(value, '@')) {
    const std::string item = trim(raw);
    if (item.empty()) bad(flag, value, "an empty item");
    auto listed = [&](const std::string& name) {
      return std::find_if(hosts.begin(), hosts.end(), [&](const HostEntry& h) { return h.name == name; });
    };
    // A bare IPv6 address that is a listed host as a whole means that host (no slots).
    const HostItem parsed = parse_host_item(item, listed(item) != hosts.end());
    if (!parsed.problem.empty()) bad(flag, value, parsed.problem);
    const std::string& host = parsed.host;
    auto known = listed(host);
    if (known == hosts.end()) {
      std::vector<std::string> names;
      for (const auto& h : hosts) names.push_back(bracketed(h.name));
      bad(flag, value, fmt::format("host '{}' is not in the host list ({})", bracketed(host), fmt::join(names, ", ")));
    }
    if (filter.count(host)) bad(flag, value, fmt::format("host '{}' is named twice", bracketed(host)));
    if (!parsed.after) {
      filter[host] = std::nullopt;
      continue;
    }
    std::set<int> slots;
    for (const std::string& s : split(*parsed.after, ',')) {
      auto n = parse_natural(trim(s));
      if (!n) bad(flag, value, fmt::format("'{}' is not a slot index", s));
      if (*n >= known->slots)
        bad(flag, value, fmt::format("host '{}' has slots 0-{}, not {}", bracketed(host), known->slots - 1, *n));
      slots.insert(static_cast<int>(*n));
    }
    filter[host] = slots;
  }
  return filter;
}

}  // namespace

std::vector<SelectedHost> select_hosts(const std::vector<HostEntry>& hosts, const std::string& include,
                                       const std::string& exclude) {
  if (!include.empty() && !exclude.empty())
    throw LaunchError(exit_code::kUsage, "--include and --exclude contradict each other; give one of them");
  const bool including = !include.empty();
  const Filter filter = including          ? parse_filter("--include", include, hosts)
                        : !exclude.empty() ? parse_filter("--exclude", exclude, hosts)
                                           : Filter{};
  std::vector<SelectedHost> out;
  for (const HostEntry& h : hosts) {
    SelectedHost s{h.name, h.slots, {}, false};
    auto f = filter.find(h.name);
    for (int slot = 0; slot < h.slots; ++slot) {
      bool keep = true;
      if (including) keep = f != filter.end() && (!f->second || f->second->count(slot));
      else if (f != filter.end()) keep = f->second && !f->second->count(slot);
      if (keep) s.selected.push_back(slot);
    }
    if (s.selected.empty()) continue;
    s.filtered = static_cast<int>(s.selected.size()) != h.slots;
    out.push_back(std::move(s));
  }
  if (out.empty())
    throw LaunchError(exit_code::kUsage,
                      fmt::format("{} '{}' leaves no host to run on", including ? "--include" : "--exclude",
                                  including ? include : exclude));
  return out;
}

}  // namespace ddp::launch::many_hosts::plan
