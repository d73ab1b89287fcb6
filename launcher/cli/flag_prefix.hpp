// Unambiguous prefixes of long flags, as torchrun's argparse takes them (--redirect=3 for
// --redirects, --nproc=2 for --nproc-per-node): rewritten into the full name before CLI11
// sees the command line. Pure; a prefix that matches two different flags throws
// LaunchError(kUsage) listing the candidates. Parsing stops at PROGRAM (the first word that
// is no flag and no flag's value) or at "--", so the program's own flags are never touched.
#pragma once

#include <string>
#include <vector>

namespace ddp::launch::cli {

// One flag as the launcher defines it: its long names without "--" (both spellings, the
// "no-" forms of a negatable flag), its one-letter names, and whether it takes a value.
struct FlagNames {
  std::vector<std::string> long_names;
  std::string short_names;  // e.g. "r" for -r
  bool takes_value = false;
};

// args with every long-flag prefix replaced by its flag's name (the name it is a prefix
// of; "--redirect=3" -> "--redirects=3"). Exact names and unknown flags pass unchanged
// (CLI11 reports an unknown one).
std::vector<std::string> expand_flag_prefixes(const std::vector<FlagNames>& flags,
                                              const std::vector<std::string>& args);

}  // namespace ddp::launch::cli
