#include "launcher/worker/worker_command.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/os/process.hpp"
#include "launcher/worker/worker_env.hpp"

namespace ddp::launch::worker {
namespace {

constexpr const char* kDefaultPath = "/usr/local/bin:/usr/bin:/bin";  // PATH when unset

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::vector<std::string> WorkerCommand::argv_for(int local_rank) const {
  std::vector<std::string> argv = prefix;
  if (!local_rank_flag.empty()) argv.push_back(local_rank_flag + "=" + std::to_string(local_rank));
  for (const auto& a : args) argv.push_back(substitute_local_rank(a, local_rank));
  return argv;
}

std::string resolve_python(const cli::Environment& env) {
  return os::resolve_program(cli::lookup(env, "PYTHON_EXEC").value_or("python3"),
                             cli::lookup(env, "PATH").value_or(kDefaultPath));
}

WorkerCommand resolve_worker_command(const WorkerCommandSpec& spec, const cli::Environment& env) {
  WorkerCommand cmd;
  cmd.args = spec.args;
  cmd.local_rank_flag = spec.local_rank_flag;
  const std::string path = cli::lookup(env, "PATH").value_or(kDefaultPath);
  const bool python_script = spec.run_path || (!spec.no_python && (spec.module || ends_with(spec.program, ".py")));
  if (!python_script) {
    cmd.executable = os::resolve_program(spec.program, path);
    cmd.prefix = {spec.program};
    return cmd;
  }
  const std::string python = cli::lookup(env, "PYTHON_EXEC").value_or("python3");
  try {
    cmd.executable = resolve_python(env);
  } catch (const LaunchError& e) {
    throw LaunchError(e.exit_code(), fmt::format("{} (the Python interpreter for {}; set "
                                                 "PYTHON_EXEC to choose another)",
                                                 e.what(), spec.program));
  }
  if (spec.module) {
    cmd.prefix = {python, "-u", "-m", spec.program};
    return cmd;
  }
  if (::access(spec.program.c_str(), R_OK) != 0)
    throw LaunchError(exit_code::kProgramNotFound,
                      fmt::format("script '{}' not found or not readable; check the path", spec.program));
  cmd.prefix = {python, "-u", spec.program};
  return cmd;
}

}  // namespace ddp::launch::worker
