// --strikes COUNT[/SECONDS]: when a node that keeps failing is left out (docs/preflight.md,
// "Strikes"). A node gets a strike each time its own worker is a round's root cause; with COUNT
// strikes within the last SECONDS the round's leader leaves it out of later rounds while
// --nnodes MIN nodes remain. Pure; a bad value throws LaunchError(kUsage) saying what it takes.
#pragma once

#include <string>
#include <vector>

namespace ddp::launch::cli {

struct StrikePolicy {
  int count = 3;           // 0: off
  double window_s = 3600;  // strikes older than this do not count
  bool on() const { return count > 0; }
  // How many of `ages_s` (seconds since each strike) fall within the window.
  int within_window(const std::vector<double>& ages_s) const;
  std::string describe() const;  // "3 within 3600 s" or "off"
};

StrikePolicy parse_strike_policy(const std::string& value);

}  // namespace ddp::launch::cli
