#include "launcher/remote/exec_command.hpp"

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"
#include "launcher/cli/environment.hpp"
#include "launcher/remote/host_list.hpp"
#include "launcher/remote/host_processes.hpp"
#include "launcher/remote/hosts_launch.hpp"
#include "launcher/remote/ssh_connections.hpp"
#include "launcher/worker/output.hpp"

extern char** environ;

namespace ddp::launch::remote {
namespace {

constexpr const char* kUsage =
    "usage: ddp-launch exec --hostfile FILE|--hosts H1[:N],... [--include|--exclude FILTER] [--ssh-port N] "
    "[--ssh-option OPT]... [--ssh-fanout N] -- CMD [ARGS...]";

struct ExecArgs {
  std::string hostfile, hosts, include, exclude;
  SshSettings ssh;
  std::vector<std::string> command;
};

int number(const std::string& flag, const std::string& value, int min, int max) {
  auto n = parse_natural(value);
  if (!n || *n < min || *n > max)
    throw LaunchError(exit_code::kUsage, fmt::format("{} '{}': give a number from {} to {}", flag, value, min, max));
  return static_cast<int>(*n);
}

ExecArgs parse_exec_args(const std::vector<std::string>& args) {
  ExecArgs e;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string flag = args[i], value;
    if (flag == "--") {
      ++i;
      break;
    }
    if (flag.rfind("--", 0) != 0) break;  // CMD starts here
    if (flag == "-h" || flag == "--help") throw LaunchError(exit_code::kUsage, kUsage);
    if (auto kv = split_once(flag, '=')) {
      flag = kv->first;
      value = kv->second;
    } else {
      if (i + 1 >= args.size()) throw LaunchError(exit_code::kUsage, fmt::format("{} needs a value; {}", flag, kUsage));
      value = args[++i];
    }
    if (flag == "--hostfile") e.hostfile = value;
    else if (flag == "--hosts") e.hosts = value;
    else if (flag == "--include") e.include = value;
    else if (flag == "--exclude") e.exclude = value;
    else if (flag == "--ssh-port" || flag == "--ssh_port") e.ssh.port = number(flag, value, 1, 65535);
    else if (flag == "--ssh-option" || flag == "--ssh_option") e.ssh.options.push_back(value);
    else if (flag == "--ssh-fanout" || flag == "--ssh_fanout") e.ssh.fanout = number(flag, value, 1, 4096);
    else throw LaunchError(exit_code::kUsage, fmt::format("exec: unknown option '{}'; {}", flag, kUsage));
  }
  e.command.assign(args.begin() + static_cast<long>(i), args.end());
  if (e.command.empty()) throw LaunchError(exit_code::kUsage, fmt::format("exec: no command given; {}", kUsage));
  if (e.hostfile.empty() && e.hosts.empty())
    throw LaunchError(exit_code::kUsage, fmt::format("exec: no hosts given; {}", kUsage));
  return e;
}

}  // namespace

int run_exec_command(const std::vector<std::string>& args) {
  const ExecArgs e = parse_exec_args(args);
  const auto selected = read_host_list(e.hostfile, e.hosts, e.include, e.exclude);
  const cli::Environment env = cli::environment_from(environ);
  const std::vector<std::string> entries = cli::environment_entries(env);
  const std::string command = fmt::format("{}", fmt::join(e.command, " "));
  std::vector<std::string> names, remote_hosts;
  std::vector<bool> local;
  for (const auto& h : selected) {
    names.push_back(h.name);
    local.push_back(is_this_machine(h.name));
    if (!local.back()) remote_hosts.push_back(h.name);
  }
  std::optional<SshConnections> connections;
  if (!remote_hosts.empty()) {
    connections.emplace(e.ssh, entries, cli::lookup(env, "PATH").value_or("/usr/bin:/bin"));
    connections->open(remote_hosts);
  }
  HostProcesses processes(names);
  for (size_t i = 0; i < names.size(); ++i)
    processes.start(i,
                    local[i] ? os::SpawnSpec{"/bin/sh", {"/bin/sh", "-c", command}, entries}
                             : connections->session(names[i], command),
                    "", false);
  const HostProcessesOutcome outcome =
      processes.run(StopBy::kTerminate, 10, [&](size_t i, const os::ExitStatus& st, bool) {
        if (!local[i] && !st.signaled && st.code == 255)
          worker::launcher_notice(fmt::format("host {}: the ssh session failed (exit code 255)", names[i]));
      });
  if (outcome.stop_signal != 0) return exit_code::kSignalBase + outcome.stop_signal;
  for (size_t i = 0; i < names.size(); ++i)
    if (!outcome.status[i].success()) {
      worker::launcher_notice(fmt::format("exec: host {} ended with {} (the first non-zero in host order)", names[i],
                                          outcome.status[i].describe()));
      return outcome.status[i].launcher_exit_code();
    }
  return exit_code::kSuccess;
}

}  // namespace ddp::launch::remote
