// The one place where CLI11 runs for ddp-launch and its subcommands, and where its parse
// errors become usage errors: LaunchError(kUsage) with CLI11's words put in context by the
// caller (which flag set, where to look); main turns that into exit code 121. Pure.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ddp::launch::cli {

// Parses args (in their order) into app. Returns true when --help (-h) was given: the caller
// prints the help it wants. Any other CLI11 error throws usage_error(explain(its message)).
bool parse_with_cli11(CLI::App& app, std::vector<std::string> args,
                      const std::function<std::string(const std::string&)>& explain);

}  // namespace ddp::launch::cli
