

#include "launcher/app/launch.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/base/text.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/many_hosts/plan/agent_plan.hpp"
#include "launcher/os/fd_io.hpp"
#include "launcher/os/process.hpp"
#include "launcher/os/this_process.hpp"
#include "launcher/app/agent.hpp"
#include "launcher/supervise/stop_input.hpp"
#include <cerrno>
#include <fmt/format.h>
#include <optional>
#include <signal.h>
#include <stdlib.h>
#include <string>
#include <unistd.h>

extern char** environ;

namespace ddp::launch {
namespace {

constexpr size_t kMaxConfigBytes = 16u << 20;

std::string read_config_line() {
  std::string line;
  char c;
  for (;;) {
    const ssize_t n = os::read_some(STDIN_FILENO, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || line.size() > kMaxConfigBytes)
      throw LaunchError(exit_code::kUsage,
                        "no agent configuration on stdin: `ddp-launch __agent` is started by `ddp-launch "
                        "--hostfile FILE` (or --hosts) on the launching machine");
    if (c == '\n') return line;
    line += c;
  }
}

// The slots a filter selected, as CUDA_VISIBLE_DEVICES: positions in this host's own list
// when it has one, else the slot numbers themselves (DeepSpeed's rule).
void select_slots(const std::vector<int>& slots) {
  if (slots.empty()) return;
  std::vector<std::string> visible;
  if (auto v = os::env_value("CUDA_VISIBLE_DEVICES")) visible = split(*v, ',', EmptyItems::kSkip);
  std::vector<std::string> chosen;
  for (int s : slots)
    chosen.push_back(visible.empty()                           ? std::to_string(s)
                     : static_cast<size_t>(s) < visible.size() ? visible[static_cast<size_t>(s)]
                                                               : std::to_string(s));
  os::set_env("CUDA_VISIBLE_DEVICES", fmt::format("{}", fmt::join(chosen, ",")));
}

}  // namespace

int run_remote_agent() {
  const many_hosts::plan::AgentConfig config = many_hosts::plan::decode_agent_config(read_config_line());
  const many_hosts::plan::AgentPlacement& p = config.placement;
  if (!config.cwd.empty() && !os::change_dir(config.cwd))
    console::launcher_notice(fmt::format("warning: {} has no folder {} (the launching shell's); starting in {}", p.host,
                                         config.cwd, os::env_value("HOME").value_or("/")));
  for (const auto& [name, value] : config.env) os::set_env(name, value);
  select_slots(p.slots);
  cli::Environment env = cli::environment_from(environ);
  for (auto it = env.begin(); it != env.end();)  // the launching machine's PET_* replace this host's
    it = it->first.rfind("PET_", 0) == 0 ? env.erase(it) : std::next(it);
  for (const auto& [name, value] : config.settings) env[name] = value;
  cli::ParsedCommandLine parsed = cli::parse_command_line(config.args, env);
  if (!parsed.options)
    throw LaunchError(exit_code::kUsage, "the agent configuration asks for help or the version, not a launch");
  for (const auto& warning : parsed.options->warnings) console::launcher_notice("warning: " + warning);
  // The end of stdin stops the agent (the launching side is gone, or ends the job); a stop
  // message before it (many_hosts/plan/agent_plan) says why; without one, this host lost its session.
  supervise::StopInputSpec session{
      STDIN_FILENO, many_hosts::plan::decode_stop_message,
      fmt::format("host {} (node rank {}) lost its session with the launching machine", p.host, p.node_rank),
      p.nnodes_min > 0};
  return run_agent(*parsed.options, env, p, session);
}

}  // namespace ddp::launch
