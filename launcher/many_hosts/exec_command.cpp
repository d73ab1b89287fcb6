

#include "launcher/base/exit_status.hpp"
#include "launcher/cli/environment.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/many_hosts/exec_command.hpp"
#include "launcher/many_hosts/host_list.hpp"
#include "launcher/many_hosts/host_processes.hpp"
#include "launcher/many_hosts/hosts_launch.hpp"
#include "launcher/many_hosts/ssh_connections.hpp"
#include <fmt/format.h>

namespace ddp::launch::many_hosts {

int run_exec_command(const cli::ExecArgs& e, const cli::Environment& env) {
  const cli::HostsOptions& h = e.hosts;
  const auto selected = read_host_list(h.hostfile, h.hosts, h.include, h.exclude);
  const std::vector<std::string> entries = cli::environment_entries(env);
  const std::string command = fmt::format("{}", fmt::join(e.command, " "));
  std::vector<std::string> names, remote_hosts;
  std::vector<bool> local;
  for (const auto& host : selected) {
    names.push_back(host.name);
    local.push_back(is_this_machine(host.name));
    if (!local.back()) remote_hosts.push_back(host.name);
  }
  os::ChildRegistry children;
  std::optional<SshConnections> connections;
  if (!remote_hosts.empty()) {
    connections.emplace(children, ssh_settings(h), entries, cli::lookup(env, "PATH").value_or("/usr/bin:/bin"));
    connections->open(remote_hosts);
  }
  HostProcesses processes(names, children);
  for (size_t i = 0; i < names.size(); ++i)
    processes.start(i,
                    local[i] ? os::SpawnSpec{"/bin/sh", {"/bin/sh", "-c", command}, entries}
                             : connections->session(names[i], command),
                    "", false);
  const HostProcessesOutcome outcome =
      processes.run(StopBy::kTerminate, 10, [&](size_t i, const os::ExitStatus& st, bool) {
        if (!local[i] && !st.signaled && st.code == 255)
          console::launcher_notice(fmt::format("host {}: the ssh session failed (exit code 255)", names[i]));
      });
  if (outcome.stop_signal != 0) return exit_code::kSignalBase + outcome.stop_signal;
  for (size_t i = 0; i < names.size(); ++i)
    if (!outcome.status[i].success()) {
      console::launcher_notice(fmt::format("exec: host {} ended with {} (the first non-zero in host order)", names[i],
                                           outcome.status[i].describe()));
      return outcome.status[i].launcher_exit_code();
    }
  return exit_code::kSuccess;
}

}  // namespace ddp::launch::many_hosts
