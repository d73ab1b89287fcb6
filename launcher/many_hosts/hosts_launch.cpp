

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/cli/host_checks.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/many_hosts/plan/env_forward.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/os/this_process.hpp"
#include "launcher/many_hosts/host_list.hpp"
#include "launcher/many_hosts/host_processes.hpp"
#include "launcher/many_hosts/hosts_launch.hpp"
#include "launcher/many_hosts/ssh_connections.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <limits.h>
#include <unistd.h>

namespace ddp::launch::many_hosts {
namespace {

std::string describe_plan(const std::vector<many_hosts::plan::AgentPlacement>& plan) {
  std::vector<std::string> items;
  for (const auto& p : plan)
    items.push_back(fmt::format(
        "{} (node {}{}{}{})", p.host, p.node_rank, p.nproc ? fmt::format(", {} worker(s)", *p.nproc) : "",
        p.slots.empty() ? "" : fmt::format(", slots {}", fmt::join(p.slots, ",")), p.local ? ", this machine" : ""));
  return fmt::format("{}", fmt::join(items, ", "));
}

std::string describe_forwarded(const std::map<std::string, std::string>& env,
                               const std::vector<std::string>& prefixes) {
  std::vector<std::string> names;
  for (const auto& [name, value] : env) names.push_back(name);
  return fmt::format("forwarding {} variable(s) to the hosts: {} (prefixes {}; --env-forward, --env-file add)",
                     names.size(), names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, " ")),
                     prefixes.empty() ? std::string("none") : fmt::format("{}", fmt::join(prefixes, " ")));
}

// The shell line an ssh session runs: the agent, or a line that says it is missing there.
std::string remote_agent_command(const std::string& launcher) {
  const std::string q = shell_quote(launcher);
  return fmt::format("if [ -x {0} ]; then exec {0} __agent; fi; echo {1} >&2; exit {2}", q,
                     shell_quote(fmt::format("ddp-launch: no ddp-launch at {} on this host; install the same version "
                                             "there, or give its path there with --remote-launcher PATH",
                                             launcher)),
                     exit_code::kProgramNotFound);
}

// Seconds the other agents get to end on their own after one failed (the root cause
// reaches them through the job's store within a few heartbeats).
constexpr double kOthersGrace_s = 15;

// One many-host launch as it goes: the hosts, their agents' plan, the ssh connections.
struct Launch {
  const HostsLaunchSpec& spec;
  os::ChildRegistry& children;  // every ssh master, session and agent starts through it
  std::vector<many_hosts::plan::SelectedHost> selected;
  many_hosts::plan::PlanInputs in;
  std::vector<many_hosts::plan::AgentPlacement> plan;
  std::optional<SshConnections> connections;
};

// The host list, read and checked against --nnodes, and each host's agent planned.
void plan_hosts(Launch& l) {
  const cli::HostsOptions& h = l.spec.hosts;
  l.selected = read_host_list(h.hostfile, h.hosts, h.include, h.exclude);
  cli::check_hosts_launch_size(l.spec.nnodes_min, l.spec.nnodes_max, l.selected.size());
  l.in = l.spec.plan;
  l.in.is_local = is_this_machine;
  l.plan = many_hosts::plan::plan_agents(l.selected, l.in, l.spec.nproc_count);
}

// The variables every agent gets: this machine's that match a prefix, --env-file's over them.
std::map<std::string, std::string> forwarded_variables(const HostsLaunchSpec& spec, const cli::Environment& env,
                                                       std::vector<std::string>& prefixes) {
  prefixes = many_hosts::plan::forward_prefixes(spec.hosts.env_forward);
  std::vector<std::pair<std::string, std::string>> env_file;
  const std::string& file = spec.hosts.env_file;
  if (!file.empty()) env_file = many_hosts::plan::parse_env_file(read_text_file(file, "--env-file"), file);
  return many_hosts::plan::forwarded_environment(env, prefixes, env_file);
}

void tell_plan(const Launch& l, const std::map<std::string, std::string>& forwarded,
               const std::vector<std::string>& prefixes) {
  console::launcher_notice(fmt::format(
      "{} host(s): {}{}", l.plan.size(), describe_plan(l.plan),
      l.spec.elastic ? fmt::format(" (elastic: --nnodes {}:{})", l.spec.nnodes_min, l.spec.nnodes_max) : ""));
  console::launcher_notice(describe_forwarded(forwarded, prefixes));
  if (!l.spec.settings.empty()) {
    std::string names_of_settings;
    for (const auto& entry : l.spec.settings) names_of_settings += " " + entry.first;
    console::launcher_notice("every host parses the arguments with this machine's" + names_of_settings);
  }
}

// An elastic job goes on without the hosts ssh cannot reach while MIN hosts are left: they
// leave the list, and the rest are planned again.
void leave_out_unreachable(Launch& l, const std::vector<std::pair<std::string, std::string>>& unreachable) {
  std::vector<std::string> words;
  for (const auto& [host, why] : unreachable) {
    words.push_back(host + ": " + why);
    const std::string name = host;
    l.selected.erase(std::find_if(l.selected.begin(), l.selected.end(),
                                  [&](const many_hosts::plan::SelectedHost& s) { return s.name == name; }));
  }
  if (static_cast<int>(l.selected.size()) < l.spec.nnodes_min)
    throw LaunchError(exit_code::kRendezvousFailed,
                      fmt::format("cannot reach {} of {} host(s) over ssh ({}), which leaves {}, fewer than "
                                  "--nnodes {}:{} needs; check those hosts, or leave them out with --exclude",
                                  unreachable.size(), l.plan.size(), fmt::join(words, "; "), l.selected.size(),
                                  l.spec.nnodes_min, l.spec.nnodes_max));
  // Nobody else will come: a round of them all closes at once (no last_call wait).
  l.in.nnodes_max = std::min(l.in.nnodes_max, static_cast<int>(l.selected.size()));
  l.plan = many_hosts::plan::plan_agents(l.selected, l.in, l.spec.nproc_count);
  console::launcher_notice(
      fmt::format("cannot reach {} host(s) over ssh ({}); the elastic job goes on with {} "
                  "host(s): {}",
                  unreachable.size(), fmt::join(words, "; "), l.plan.size(), describe_plan(l.plan)));
}

// One ssh connection per remote host of the plan.
void connect_hosts(Launch& l) {
  std::vector<std::string> remote_hosts;
  for (const auto& p : l.plan)
    if (!p.local) remote_hosts.push_back(p.host);
  if (remote_hosts.empty()) return;
  l.connections.emplace(l.children, l.spec.ssh, l.spec.env_entries, l.spec.path_env);
  const auto unreachable = l.connections->open(remote_hosts, l.spec.elastic);
  console::launcher_notice(fmt::format("ssh: connected to {} host(s) in {:.2f} s",
                                       remote_hosts.size() - unreachable.size(), l.connections->connect_seconds()));
  if (!unreachable.empty()) leave_out_unreachable(l, unreachable);
}

// Each host's agent: ssh runs `launcher __agent` there; this machine's starts directly.
void start_agents(const Launch& l, HostProcesses& processes, const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& forwarded, const std::string& launcher) {
  const std::string self = os::executable_path();
  for (size_t i = 0; i < l.plan.size(); ++i) {
    many_hosts::plan::AgentConfig config{args, forwarded, l.spec.settings, os::current_dir(), l.plan[i]};
    os::SpawnSpec spec = l.plan[i].local ? os::SpawnSpec{self, {self, "__agent"}, l.spec.env_entries}
                                         : l.connections->session(l.plan[i].host, remote_agent_command(launcher));
    processes.start(i, std::move(spec), many_hosts::plan::encode_agent_config(config), true);
  }
}

// What the agents' ends told: the host lost first, the hosts an elastic job went on without.
struct AgentEnds {
  std::optional<size_t> lost;
  std::vector<bool> left_out;
};

// Until every agent ended. An agent's own failure gives the others kOthersGrace_s to end
// with its root cause; a lost host (killed, or its ssh session gone) stops the others at
// once, unless an elastic job can go on without it.
HostProcessesOutcome watch_agents(const Launch& l, HostProcesses& processes, AgentEnds& ends) {
  const auto& plan = l.plan;
  ends.left_out.assign(plan.size(), false);
  int alive = static_cast<int>(plan.size());
  const bool store_on_first = !plan.front().rdzv_endpoint.empty() || !plan.front().master_addr.empty();
  return processes.run(
      StopBy::kCloseStdin, l.spec.stop_deadline_s, [&](size_t i, const os::ExitStatus& st, bool in_stop) {
        // Killed, or (over ssh) ssh's own failure 255: not an exit the agent chose.
        const bool session_died = st.signaled || (!plan[i].local && st.code == 255);
        if (in_stop || st.success()) return;
        if (!session_died) {  // the agent's own failure: the root cause reaches the others through the store
          processes.request_stop(kOthersGrace_s,
                                 fmt::format("host {} (node rank {}) failed ({})", plan[i].host, i, st.describe()));
          return;
        }
        const std::string who = fmt::format("host {} (node rank {})", plan[i].host, i);
        const std::string how =
            fmt::format("its {} ended ({})", plan[i].local ? "agent" : "ssh session", st.describe());
        console::launcher_notice(who + " lost: " + how);
        if (l.spec.elastic && --alive >= l.spec.nnodes_min && !(store_on_first && i == 0)) {
          ends.left_out[i] = true;  // its agent left as a lost node: the others' rendezvous goes on
          console::launcher_notice(fmt::format("the elastic job goes on with {} host(s) (--nnodes {}:{})", alive,
                                               l.spec.nnodes_min, l.spec.nnodes_max));
          return;
        }
        processes.request_stop(0, who + " was lost: " + how);  // the others learn nothing more by waiting
        if (!ends.lost) ends.lost = i;
      });
}

// The job's exit code from every agent's: a host lost first, else the first failure that
// was not our stop, else the end of a job whose every failed host we stopped.
int job_exit_code(const Launch& l, const HostProcessesOutcome& outcome, const AgentEnds& ends) {
  const auto& plan = l.plan;
  std::vector<std::string> failed;
  std::optional<int> code;
  for (size_t i = 0; i < plan.size(); ++i) {
    const os::ExitStatus& st = outcome.status[i];
    if (st.success() || ends.left_out[i]) continue;
    failed.push_back(fmt::format("{} (node rank {}): {}", plan[i].host, i, st.describe()));
    if (!code && !outcome.ended_in_stop[i]) code = st.launcher_exit_code();  // not one we stopped
  }
  if (!code && !failed.empty()) code = exit_code::kRendezvousFailed;  // every failed host was stopped by us
  if (ends.lost) {
    console::launcher_notice(fmt::format("the job failed: host {} (node rank {}) was lost first; hosts: {}",
                                         plan[*ends.lost].host, *ends.lost, fmt::join(failed, "; ")));
    return exit_code::kRendezvousFailed;
  }
  if (code) {
    console::launcher_notice(
        fmt::format("the job failed (exit code {}); the failure report above names the rank; "
                    "hosts that failed: {}",
                    *code, fmt::join(failed, "; ")));
    return *code;
  }
  const auto gone = std::count(ends.left_out.begin(), ends.left_out.end(), true);
  if (gone)
    console::launcher_notice(fmt::format("the elastic job finished on {} host(s); {} host(s) lost on the way",
                                         plan.size() - static_cast<size_t>(gone), gone));
  else console::launcher_notice(fmt::format("all {} host(s) finished", plan.size()));
  return exit_code::kSuccess;
}

}  // namespace

SshSettings ssh_settings(const cli::HostsOptions& h) {
  SshSettings ssh;
  ssh.port = h.ssh_port;
  ssh.options = h.ssh_options;
  ssh.fanout = h.ssh_fanout;
  return ssh;
}

bool is_this_machine(const std::string& host) {
  if (host == "localhost" || os::is_loopback_address(host) || host == os::host_name()) return true;
  return os::is_local_address(host);
}

int run_hosts_launch(const HostsLaunchSpec& spec, const std::vector<std::string>& args, const cli::Environment& env) {
  os::ChildRegistry children;  // before the launch: its connections and processes start through it
  Launch l{spec, children, {}, {}, {}, std::nullopt};
  plan_hosts(l);
  std::vector<std::string> prefixes;
  const std::map<std::string, std::string> forwarded = forwarded_variables(spec, env, prefixes);
  const std::string launcher = spec.hosts.remote_launcher.empty() ? os::executable_path() : spec.hosts.remote_launcher;
  tell_plan(l, forwarded, prefixes);
  connect_hosts(l);
  std::vector<std::string> names;
  for (const auto& p : l.plan) names.push_back(p.host);
  HostProcesses processes(names, children);
  start_agents(l, processes, args, forwarded, launcher);
  AgentEnds ends;
  const HostProcessesOutcome outcome = watch_agents(l, processes, ends);
  if (outcome.stop_signal != 0) return exit_code::kSignalBase + outcome.stop_signal;
  return job_exit_code(l, outcome, ends);
}

}  // namespace ddp::launch::many_hosts
