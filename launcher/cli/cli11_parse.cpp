#include "launcher/cli/cli11_parse.hpp"

#include <algorithm>

#include <CLI/CLI.hpp>

#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {

bool parse_with_cli11(CLI::App& app, std::vector<std::string> args,
                      const std::function<std::string(const std::string&)>& explain) {
  std::reverse(args.begin(), args.end());  // CLI11 consumes a reversed vector
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    return true;
  } catch (const CLI::ParseError& e) {
    usage_error(explain(e.what()));
  }
  return false;
}

}  // namespace ddp::launch::cli
