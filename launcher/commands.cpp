

#include "launcher/app/launch.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/command_line.hpp"
#include "launcher/cli/exec_args.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/cli/preflight_args.hpp"
#include "launcher/cli/status_args.hpp"
#include "launcher/commands.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/preflight/nccl_check.hpp"
#include "launcher/preflight/node_check.hpp"
#include "launcher/worker/worker_command.hpp"
#include "launcher/preflight/nccl_probe.hpp"
#include "launcher/many_hosts/exec_command.hpp"
#include "launcher/many_hosts/hosts_launch.hpp"
#include "launcher/app/agent.hpp"
#include "launcher/app/resolve_hosts_launch.hpp"
#include "launcher/app/status.hpp"
#include <unistd.h>

namespace ddp::launch {
namespace {

// `ddp-launch [OPTIONS] PROGRAM [ARGS...]`: this node's agent, or, with --hostfile/--hosts,
// the launching machine of a many-host launch (each host's agent gets args as they are).
int run_launch(const std::vector<std::string>& args, const cli::Environment& env) {
  const cli::ParsedCommandLine parsed = cli::parse_command_line(args, env);
  if (!parsed.options) {  // --help, --version, --print-completion
    console::write_all(STDOUT_FILENO, parsed.text);
    return parsed.exit_code;
  }
  for (const auto& notice : parsed.options->notices) console::launcher_notice(notice);
  for (const auto& warning : parsed.options->warnings) console::launcher_notice("warning: " + warning);
  if (parsed.options->hosts.any())
    return many_hosts::run_hosts_launch(resolve_hosts_launch(*parsed.options, env), args, env);
  return run_agent(*parsed.options, env);
}

// The Python a job would run; "" when there is none.
std::string python_of(const cli::Environment& env) {
  try {
    return worker::resolve_python(env);
  } catch (const LaunchError&) {  // no Python here: no torch wheel either
    return "";
  }
}

// `ddp-launch preflight`: every finding on stdout; 0, or 118 when a check failed; --gpus: the
// NCCL of PYTHON_EXEC's (or python3's) torch wheel, unless DDP_LAUNCH_NCCL_LIBRARY names one.
int run_preflight_command(const std::vector<std::string>& args, const cli::Environment& env) {
  const std::optional<cli::PreflightArgs> p = cli::parse_preflight_args(args);
  if (!p) {  // --help
    console::write_all(STDOUT_FILENO, std::string(cli::kPreflightUsage) + "\n");
    return 0;
  }
  std::string run_parent = p->log_dir;
  if (run_parent.empty()) run_parent = cli::lookup(env, "TMPDIR").value_or("/tmp");
  os::ChildRegistry children;
  const preflight::NodeCheck check = preflight::check_node(
      children, p->conf,
      {p->workers, p->gpus ? p->workers : 0, preflight::preflight_folders(env, run_parent, p->snapshot_persist_dir), "",
       p->gpus ? preflight::wheel_nccl(python_of(env)) : ""},
      {});
  console::write_all(STDOUT_FILENO, preflight::format_findings(check.findings));
  return check.failed.empty() ? exit_code::kSuccess : exit_code::kPreflightFailed;
}

// `ddp-launch __nccl-probe GPUS MIB` (preflight/nccl_check.hpp starts it): one line of figures.
int run_nccl_probe(const std::vector<std::string>& args) {
  int gpus = 0;
  double mib = 0;
  try {
    if (args.size() == 2) gpus = std::stoi(args[0]), mib = std::stod(args[1]);
  } catch (const std::exception&) {  // std::invalid_argument, std::out_of_range
  }
  if (gpus < 1 || !(mib > 0)) {
    console::write_all(STDERR_FILENO, "usage: ddp-launch __nccl-probe GPUS MIB (the pre-flight NCCL check's helper)\n");
    return exit_code::kUsage;
  }
  console::write_all(STDOUT_FILENO, preflight::nccl_figures_json(preflight::run_nccl_allreduce(gpus, mib)) + "\n");
  return exit_code::kSuccess;
}

int run_status(const std::vector<std::string>& args) {
  const std::optional<cli::StatusArgs> status = cli::parse_status_args(args);
  if (!status) {  // --help
    console::write_all(STDOUT_FILENO, std::string(cli::kStatusUsage) + "\n");
    return 0;
  }
  return run_status_command(*status);
}

}  // namespace

int run_command_line(const std::vector<std::string>& args, const cli::Environment& env) {
  const cli::CommandLine line = cli::split_command(args);
  switch (line.command) {
    case cli::Command::kStatus: return run_status(line.args);
    case cli::Command::kPreflight: return run_preflight_command(line.args, env);
    case cli::Command::kExec: return many_hosts::run_exec_command(cli::parse_exec_args(line.args), env);
    case cli::Command::kAgent: return run_remote_agent();  // its configuration comes on stdin
    case cli::Command::kNcclProbe: return run_nccl_probe(line.args);
    case cli::Command::kLaunch: break;
  }
  return run_launch(line.args, env);
}

}  // namespace ddp::launch
