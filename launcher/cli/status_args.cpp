#include "launcher/cli/status_args.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/cli11_parse.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

[[noreturn]] void unexpected(const std::string& arg) {
  usage_error(fmt::format("status: unexpected '{}'; {}", arg, kStatusUsage));
}

}  // namespace

std::optional<StatusArgs> parse_status_args(const std::vector<std::string>& args) {
  StatusArgs s;
  std::vector<std::string> targets;
  std::string interval;
  CLI::App app{"A terminal view of a job's status", "ddp-launch status"};
  app.allow_extras();  // an unknown flag is reported below, as unexpected
  app.add_option("target", targets);
  app.add_flag("-w,--watch", s.watch)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("-n,--interval", interval)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  if (parse_with_cli11(app, args,
                       [](const std::string& what) { return fmt::format("status: {}; {}", what, kStatusUsage); }))
    return std::nullopt;
  if (!app.remaining().empty()) unexpected(app.remaining().front());
  if (targets.size() > 1) unexpected(targets[1]);
  if (!targets.empty() && !targets[0].empty() && targets[0][0] == '-') unexpected(targets[0]);  // "-", "-5"
  if (targets.empty()) usage_error(std::string("status: no target; ") + kStatusUsage);
  s.target = targets.front();
  if (app.count("--interval") > 0) {
    const auto v = parse_seconds(interval, SecondsFloor::kPositive);
    if (!v || *v < 0.1) usage_error(fmt::format("status --interval '{}': seconds >= 0.1", interval));
    s.interval_s = *v;
  }
  return s;
}

}  // namespace ddp::launch::cli
