#include "launcher/cli/strike_policy.hpp"

#include <algorithm>
#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {

int StrikePolicy::within_window(const std::vector<double>& ages_s) const {
  return static_cast<int>(std::count_if(ages_s.begin(), ages_s.end(), [&](double a) { return a <= window_s; }));
}

std::string StrikePolicy::describe() const { return on() ? fmt::format("{} within {:g} s", count, window_s) : "off"; }

StrikePolicy parse_strike_policy(const std::string& value) {
  const auto bad = [&] {
    usage_error(fmt::format(
        "--strikes {}: expected COUNT or COUNT/SECONDS (e.g. 3/3600: a node whose workers failed 3 times within an "
        "hour is left out; 0: never)",
        value));
  };
  StrikePolicy p;
  const auto parts = split_once(value, '/');
  const auto count = parse_natural(parts ? parts->first : value);
  if (!count || *count > 1000000) bad();
  p.count = static_cast<int>(*count);
  if (parts) {
    const auto window = parse_seconds(parts->second, SecondsFloor::kNonNegative);
    if (!window || *window <= 0) bad();
    p.window_s = *window;
  }
  return p;
}

}  // namespace ddp::launch::cli
