// ddp-launch: runs the command line (commands.hpp) and turns errors into exit codes, the one
// place that does.
#include <unistd.h>

#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/environment.hpp"
#include "launcher/commands.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/process.hpp"

extern char** environ;

int main(int argc, char** argv) {
  using namespace ddp::launch;
  try {
    os::ignore_sigpipe();
    return run_command_line(std::vector<std::string>(argv + 1, argv + argc), cli::environment_from(environ));
  } catch (const LaunchError& e) {
    console::write_all(STDERR_FILENO, fmt::format("ddp-launch: error: {}\n", e.what()));
    return e.exit_code();
  } catch (const std::exception& e) {
    console::write_all(STDERR_FILENO, fmt::format("ddp-launch: internal error: {}\n", e.what()));
    return exit_code::kInternalError;
  }
}
