// The flags of a many-host launch (--hostfile, --hosts, --include/--exclude, ssh and
// environment forwarding): raw strings, read by launcher/many_hosts when one of --hostfile or
// --hosts is given (docs/hosts.md), and by `ddp-launch exec`. Pure; nothing here reads a file.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ddp::launch::cli {

struct HostsOptions {
  std::string hostfile;                  // --hostfile FILE
  std::string hosts;                     // --hosts h1:4,h2:4
  std::string include, exclude;          // DeepSpeed's h1:0,2@h2
  std::optional<int> ssh_port;           // --ssh-port
  std::vector<std::string> ssh_options;  // --ssh-option OPT, repeatable (each: ssh -o OPT)
  int ssh_fanout = 32;                   // --ssh-fanout: connections opened at once
  std::string env_forward;               // --env-forward PREFIX,...
  std::string env_file;                  // --env-file FILE
  std::string remote_launcher;           // --remote-launcher PATH ("": this binary's path)
  bool any() const { return !hostfile.empty() || !hosts.empty(); }
};

// The host list, its filters and ssh (--hostfile, --hosts, --include, --exclude, --ssh-*):
// what `ddp-launch exec` takes too.
void define_host_list_flags(CLI::App& app, HostsOptions& h);
// Those, and what a launch sends to its agents (--env-forward, --env-file, --remote-launcher).
void define_host_flags(CLI::App& app, HostsOptions& h);

}  // namespace ddp::launch::cli
