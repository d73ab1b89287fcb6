

#include "launcher/agent.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/base/text.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/hosts/agent_plan.hpp"
#include "launcher/os/fd_io.hpp"
#include "launcher/os/process.hpp"
#include "launcher/os/this_process.hpp"
#include "launcher/remote_agent.hpp"
#include "launcher/supervise/stop_requests.hpp"
#include <cerrno>
#include <fmt/format.h>
#include <optional>
#include <signal.h>
#include <stdlib.h>
#include <string>
#include <thread>
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

// The end of stdin stops the agent like a SIGTERM would (the launching side is gone, or
// ends the job): a stop request with the reason, so the stop is reported by it rather than by
// a signal. A stop message before it (hosts/agent_plan) says why; without one, this host lost
// its session with the launching machine. The thread ends with stdin; the process does not
// wait for it (a read cannot be cancelled), so it owns only what it captured.
void watch_stdin(const hosts::AgentPlacement& p, supervise::StopRequests& stops) {
  std::thread([lost = fmt::format("host {} (node rank {}) lost its session with the launching machine", p.host,
                                  p.node_rank),
               elastic = p.nnodes_min > 0, &stops] {
    std::string pending;
    std::optional<std::string> reason;
    char buf[256];
    for (;;) {
      const ssize_t n = os::read_some(STDIN_FILENO, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      pending.append(buf, static_cast<size_t>(n));
      for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1))
        if (auto said = hosts::decode_stop_message(pending.substr(0, nl)); said && !reason) reason = said;
      if (pending.size() > kMaxConfigBytes) pending.clear();
    }
    if (!reason && elastic) {  // gone from the job as a lost node is: the others go on without it
      console::launcher_notice(lost + ": leaving the elastic job as a lost node (its workers killed)");
      os::exit_at_once(exit_code::from_signal(SIGKILL));  // the workers die with it (PR_SET_PDEATHSIG)
    }
    console::launcher_notice(fmt::format("stopping (as on SIGTERM): {}", reason.value_or(lost)));
    stops.request(reason.value_or(lost));
  }).detach();
}

}  // namespace

int run_remote_agent() {
  const hosts::AgentConfig config = hosts::decode_agent_config(read_config_line());
  const hosts::AgentPlacement& p = config.placement;
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
  static supervise::StopRequests stops;  // outlives the stdin watch, which is never joined
  watch_stdin(p, stops);
  return run_agent(*parsed.options, env, p, &stops);
}

}  // namespace ddp::launch
