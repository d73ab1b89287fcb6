#include "launcher/cli/exec_args.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "launcher/cli/cli11_parse.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {

ExecArgs parse_exec_args(const std::vector<std::string>& args) {
  ExecArgs e;
  CLI::App app{"Run a command on every host", "ddp-launch exec"};
  app.prefix_command();  // CMD and its arguments are left as they are
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  define_host_list_flags(app, e.hosts);
  if (parse_with_cli11(app, args,
                       [](const std::string& what) { return fmt::format("exec: {}; {}", what, kExecUsage); }))
    usage_error(kExecUsage);
  std::vector<std::string> rest = app.remaining();
  const bool separated = !rest.empty() && rest[0] == "--";
  if (separated) rest.erase(rest.begin());
  else if (!rest.empty() && rest[0].rfind("--", 0) == 0)
    usage_error(fmt::format("exec: unknown option '{}'; {}", rest[0], kExecUsage));
  if (rest.empty()) usage_error(fmt::format("exec: no command given; {}", kExecUsage));
  if (!e.hosts.any()) usage_error(fmt::format("exec: no hosts given; {}", kExecUsage));
  e.command = std::move(rest);
  return e;
}

}  // namespace ddp::launch::cli
