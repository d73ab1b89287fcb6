// Long-flag prefixes into full names; see flag_prefix.hpp.
#include "launcher/cli/flag_prefix.hpp"

#include <fmt/format.h>

#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// The flag named exactly name, else the one flag that name is a prefix of; nullptr when
// none matches. Names of one flag (--nproc-per-node, --nproc_per_node) count once.
const FlagNames* find_flag(const std::vector<FlagNames>& flags, const std::string& name, std::string& full) {
  for (const auto& f : flags)
    for (const auto& n : f.long_names)
      if (n == name) {
        full = n;
        return &f;
      }
  const FlagNames* found = nullptr;
  std::vector<std::string> candidates;  // one name per flag that matches
  for (const auto& f : flags) {
    for (const auto& n : f.long_names) {
      if (!starts_with(n, name)) continue;
      if (!found) {
        found = &f;
        full = n;
      }
      candidates.push_back("--" + n);
      break;
    }
  }
  if (candidates.size() > 1) {
    std::string list;
    for (const auto& c : candidates) list += (list.empty() ? "" : ", ") + c;
    usage_error(fmt::format("--{} is ambiguous: it could be {}; spell the flag out", name, list));
  }
  return found;
}

const FlagNames* find_short(const std::vector<FlagNames>& flags, char c) {
  for (const auto& f : flags)
    if (f.short_names.find(c) != std::string::npos) return &f;
  return nullptr;
}

}  // namespace

std::vector<std::string> expand_flag_prefixes(const std::vector<FlagNames>& flags,
                                              const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  size_t i = 0;
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--" || a.size() < 2 || a[0] != '-') break;  // PROGRAM (or the separator) starts here
    if (a[1] != '-') {                                    // -m, -r 3, -r3
      out.push_back(a);
      const FlagNames* f = find_short(flags, a[1]);
      if (f && f->takes_value && a.size() == 2 && i + 1 < args.size()) out.push_back(args[++i]);
      continue;
    }
    const size_t eq = a.find('=');
    const std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    std::string full;
    const FlagNames* f = name.empty() ? nullptr : find_flag(flags, name, full);
    if (!f) {
      out.push_back(a);  // unknown: CLI11's error (or PROGRAM's check) names it
      continue;
    }
    out.push_back("--" + full + (eq == std::string::npos ? "" : a.substr(eq)));
    if (f->takes_value && eq == std::string::npos && i + 1 < args.size()) out.push_back(args[++i]);
  }
  out.insert(out.end(), args.begin() + static_cast<long>(i), args.end());
  return out;
}

}  // namespace ddp::launch::cli
