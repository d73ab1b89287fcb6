// ddp-launch: parse the command line, run the agent, turn errors into exit codes.
#include <unistd.h>

#include <exception>

#include <fmt/format.h>

#include "launcher/agent.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/worker/output.hpp"
#include "launcher/os/process.hpp"
#include "launcher/remote/exec_command.hpp"
#include "launcher/remote/hosts_launch.hpp"
#include "launcher/remote_agent.hpp"
#include "launcher/resolve_hosts_launch.hpp"
#include "launcher/status_command.hpp"

extern char** environ;

int main(int argc, char** argv) {
  using namespace ddp::launch;
  try {
    os::ignore_sigpipe();
    // `ddp-launch status TARGET`: a terminal view of a running (or finished) job. A program
    // named "status" runs as ./status or after "--".
    if (argc > 1 && std::string(argv[1]) == "status")
      return run_status_command(std::vector<std::string>(argv + 2, argv + argc));
    // `ddp-launch exec --hostfile FILE -- CMD`: CMD on every host (docs/hosts.md).
    if (argc > 1 && std::string(argv[1]) == "exec")
      return remote::run_exec_command(std::vector<std::string>(argv + 2, argv + argc));
    // One host's agent of a --hostfile launch, its configuration on stdin.
    if (argc > 1 && std::string(argv[1]) == "__agent") return run_remote_agent();
    const cli::Environment env = cli::environment_from(environ);
    cli::ParsedCommandLine parsed = cli::parse_command_line(std::vector<std::string>(argv + 1, argv + argc), env);
    if (!parsed.options) {
      worker::write_all(STDOUT_FILENO, parsed.text);
      return parsed.exit_code;
    }
    for (const auto& notice : parsed.options->notices) worker::launcher_notice(notice);
    for (const auto& warning : parsed.options->warnings) worker::launcher_notice("warning: " + warning);
    if (parsed.options->hosts.any())
      return remote::run_hosts_launch(resolve_hosts_launch(*parsed.options, env),
                                      std::vector<std::string>(argv + 1, argv + argc), env);
    return run_agent(*parsed.options, env);
  } catch (const LaunchError& e) {
    worker::write_all(STDERR_FILENO, fmt::format("ddp-launch: error: {}\n", e.what()));
    return e.exit_code();
  } catch (const std::exception& e) {
    worker::write_all(STDERR_FILENO, fmt::format("ddp-launch: internal error: {}\n", e.what()));
    return exit_code::kInternalError;
  }
}
