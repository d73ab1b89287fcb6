// `ddp-launch status HOST:PORT|RUN_DIR [--watch] [--interval SECONDS]`: its arguments, read
// by CLI11 (what the command does: status_command.hpp). Pure; errors throw
// LaunchError(kUsage) naming what is wrong, with the usage line.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ddp::launch::cli {

inline constexpr const char* kStatusUsage = "usage: ddp-launch status HOST:PORT|RUN_DIR [--watch] [--interval SECONDS]";

struct StatusArgs {
  std::string target;       // HOST:PORT or a run directory, as given
  bool watch = false;       // -w, --watch: again every interval_s until the job ends
  double interval_s = 2.0;  // -n, --interval: at least 0.1
};

// args: what follows "status". nullopt: -h/--help (print kStatusUsage, exit 0).
std::optional<StatusArgs> parse_status_args(const std::vector<std::string>& args);

}  // namespace ddp::launch::cli
