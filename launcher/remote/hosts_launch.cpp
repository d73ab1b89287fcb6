#include "launcher/remote/hosts_launch.hpp"

#include <limits.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/hosts/agent_plan.hpp"
#include "launcher/hosts/env_forward.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/os/this_process.hpp"
#include "launcher/remote/host_list.hpp"
#include "launcher/remote/host_processes.hpp"
#include "launcher/remote/ssh_connections.hpp"
#include "launcher/worker/output.hpp"

namespace ddp::launch::remote {
namespace {

[[noreturn]] void usage(const std::string& message) { throw LaunchError(exit_code::kUsage, message); }

bool elastic(const cli::LaunchOptions& o) { return o.nnodes_min != o.nnodes_max; }

void check_flags(const cli::LaunchOptions& o) {
  if (!elastic(o) && (o.nnodes_min != 1 || o.nnodes_max != 1))
    usage(
        "--hostfile/--hosts set the node count (one node per host); drop --nnodes, or give --nnodes MIN:MAX for "
        "an elastic job on at least MIN of the hosts");
  if (o.rdzv_backend == "etcd" && o.rdzv_endpoint.empty())
    usage("--rdzv-backend=etcd needs --rdzv-endpoint=HOST[:PORT][,HOST[:PORT]...]: etcd's client addresses");
  if (o.node_rank_given) usage("--hostfile/--hosts give each host its node rank (list order); drop --node-rank");
  if (o.dry_run) usage("--dry-run shows one node; run it without --hostfile/--hosts, or on a host");
  if (o.standalone) usage("--standalone runs a single node; drop it with --hostfile/--hosts");
}

std::string current_dir() { return os::current_dir(); }

std::string describe_plan(const std::vector<hosts::AgentPlacement>& plan) {
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

void check_elastic(const cli::LaunchOptions& o, size_t hosts) {
  if (o.nnodes_max > static_cast<int>(hosts))
    usage(
        fmt::format("--nnodes {}:{} asks for up to {} node(s), and the host list has {} (one node per host); give "
                    "MIN:MAX at most {}",
                    o.nnodes_min, o.nnodes_max, o.nnodes_max, hosts, hosts));
}

}  // namespace

std::string this_executable() { return os::executable_path(); }

bool is_this_machine(const std::string& host) {
  if (host == "localhost" || os::is_loopback_address(host) || host == os::host_name()) return true;
  return os::is_local_address(host);
}

int run_hosts_launch(const cli::LaunchOptions& o, const std::vector<std::string>& args, const cli::Environment& env) {
  check_flags(o);
  const cli::HostsOptions& h = o.hosts;
  auto selected = read_host_list(h.hostfile, h.hosts, h.include, h.exclude);
  const bool is_elastic = elastic(o);
  if (is_elastic) check_elastic(o, selected.size());
  hosts::PlanInputs in;
  in.nproc_given = o.nproc_given;
  in.master_addr_given = o.master_addr != "127.0.0.1";
  in.master_addr = o.master_addr;
  in.rdzv_endpoint_given = !o.rdzv_endpoint.empty();
  in.master_port = o.master_port;
  in.is_local = is_this_machine;
  if (is_elastic) {
    in.nnodes_min = o.nnodes_min;
    in.nnodes_max = o.nnodes_max;
  }
  std::optional<int> nproc_count;
  if (o.nproc.kind == cli::NprocSpec::Kind::kCount) nproc_count = o.nproc.count;
  std::vector<hosts::AgentPlacement> plan = hosts::plan_agents(selected, in, nproc_count);

  const std::vector<std::string> prefixes = hosts::forward_prefixes(h.env_forward);
  std::vector<std::pair<std::string, std::string>> env_file;
  if (!h.env_file.empty()) env_file = hosts::parse_env_file(read_text_file(h.env_file, "--env-file"), h.env_file);
  const auto forwarded = hosts::forwarded_environment(env, prefixes, env_file);
  std::map<std::string, std::string> settings;  // PET_*: this machine's flag defaults, for every agent
  for (const auto& [name, value] : env)
    if (name.rfind("PET_", 0) == 0 && !value.empty()) settings[name] = value;
  const std::string launcher = h.remote_launcher.empty() ? this_executable() : h.remote_launcher;

  std::vector<std::string> remote_hosts;
  for (const auto& p : plan)
    if (!p.local) remote_hosts.push_back(p.host);
  worker::launcher_notice(
      fmt::format("{} host(s): {}{}", plan.size(), describe_plan(plan),
                  is_elastic ? fmt::format(" (elastic: --nnodes {}:{})", o.nnodes_min, o.nnodes_max) : ""));
  worker::launcher_notice(describe_forwarded(forwarded, prefixes));
  if (!settings.empty()) {
    std::string names_of_settings;
    for (const auto& entry : settings) names_of_settings += " " + entry.first;
    worker::launcher_notice("every host parses the arguments with this machine's" + names_of_settings);
  }

  SshSettings ssh;
  ssh.port = h.ssh_port;
  ssh.options = h.ssh_options;
  ssh.fanout = h.ssh_fanout;
  const std::string path_env = cli::lookup(env, "PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  const std::vector<std::string> env_entries = cli::environment_entries(env);
  std::optional<SshConnections> connections;
  if (!remote_hosts.empty()) {
    connections.emplace(ssh, env_entries, path_env);
    const auto unreachable = connections->open(remote_hosts, is_elastic);
    worker::launcher_notice(fmt::format("ssh: connected to {} host(s) in {:.2f} s",
                                        remote_hosts.size() - unreachable.size(), connections->connect_seconds()));
    if (!unreachable.empty()) {  // elastic: the job goes on without them while MIN hosts are left
      std::vector<std::string> words;
      for (const auto& [host, why] : unreachable) {
        words.push_back(host + ": " + why);
        const std::string name = host;
        selected.erase(std::find_if(selected.begin(), selected.end(),
                                    [&](const hosts::SelectedHost& s) { return s.name == name; }));
      }
      if (static_cast<int>(selected.size()) < o.nnodes_min)
        throw LaunchError(exit_code::kRendezvousFailed,
                          fmt::format("cannot reach {} of {} host(s) over ssh ({}), which leaves {}, fewer than "
                                      "--nnodes {}:{} needs; check those hosts, or leave them out with --exclude",
                                      unreachable.size(), plan.size(), fmt::join(words, "; "), selected.size(),
                                      o.nnodes_min, o.nnodes_max));
      // Nobody else will come: a round of them all closes at once (no last_call wait).
      in.nnodes_max = std::min(in.nnodes_max, static_cast<int>(selected.size()));
      plan = hosts::plan_agents(selected, in, nproc_count);
      worker::launcher_notice(
          fmt::format("cannot reach {} host(s) over ssh ({}); the elastic job goes on with {} "
                      "host(s): {}",
                      unreachable.size(), fmt::join(words, "; "), plan.size(), describe_plan(plan)));
    }
  }
  std::vector<std::string> names;
  for (const auto& p : plan) names.push_back(p.host);

  HostProcesses processes(names);
  const std::string self = this_executable();
  for (size_t i = 0; i < plan.size(); ++i) {
    hosts::AgentConfig config{args, forwarded, settings, current_dir(), plan[i]};
    os::SpawnSpec spec = plan[i].local ? os::SpawnSpec{self, {self, "__agent"}, env_entries}
                                       : connections->session(plan[i].host, remote_agent_command(launcher));
    processes.start(i, std::move(spec), hosts::encode_agent_config(config), true);
  }

  std::optional<size_t> lost;
  std::vector<bool> left_out(plan.size());  // elastic: lost, and the job went on without it
  int alive = static_cast<int>(plan.size());
  const bool store_on_first = !plan.front().rdzv_endpoint.empty() || !plan.front().master_addr.empty();
  const HostProcessesOutcome outcome = processes.run(
      StopBy::kCloseStdin, o.shutdown_timeout_s + 30, [&](size_t i, const os::ExitStatus& st, bool in_stop) {
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
        worker::launcher_notice(who + " lost: " + how);
        if (is_elastic && --alive >= o.nnodes_min && !(store_on_first && i == 0)) {
          left_out[i] = true;  // its agent left as a lost node: the others' rendezvous goes on
          worker::launcher_notice(fmt::format("the elastic job goes on with {} host(s) (--nnodes {}:{})", alive,
                                              o.nnodes_min, o.nnodes_max));
          return;
        }
        processes.request_stop(0, who + " was lost: " + how);  // the others learn nothing more by waiting
        if (!lost) lost = i;
      });
  if (outcome.stop_signal != 0) return exit_code::kSignalBase + outcome.stop_signal;
  std::vector<std::string> failed;
  std::optional<int> code;
  for (size_t i = 0; i < plan.size(); ++i) {
    const os::ExitStatus& st = outcome.status[i];
    if (st.success() || left_out[i]) continue;
    failed.push_back(fmt::format("{} (node rank {}): {}", plan[i].host, i, st.describe()));
    if (!code && !outcome.ended_in_stop[i]) code = st.launcher_exit_code();  // not one we stopped
  }
  if (!code && !failed.empty()) code = exit_code::kRendezvousFailed;  // every failed host was stopped by us
  if (lost) {
    worker::launcher_notice(fmt::format("the job failed: host {} (node rank {}) was lost first; hosts: {}",
                                        plan[*lost].host, *lost, fmt::join(failed, "; ")));
    return exit_code::kRendezvousFailed;
  }
  if (code) {
    worker::launcher_notice(
        fmt::format("the job failed (exit code {}); the failure report above names the rank; "
                    "hosts that failed: {}",
                    *code, fmt::join(failed, "; ")));
    return *code;
  }
  const auto gone = std::count(left_out.begin(), left_out.end(), true);
  if (gone)
    worker::launcher_notice(fmt::format("the elastic job finished on {} host(s); {} host(s) lost on the way",
                                        plan.size() - static_cast<size_t>(gone), gone));
  else worker::launcher_notice(fmt::format("all {} host(s) finished", plan.size()));
  return exit_code::kSuccess;
}

}  // namespace ddp::launch::remote
