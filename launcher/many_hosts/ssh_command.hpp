// The OpenSSH command lines of a many-host launch: one master connection per host
// (ControlMaster, BatchMode: never a password prompt), then sessions multiplexed over it.
// ssh keeps the first value it reads of an option: what the launch relies on (BatchMode,
// the control socket, --ssh-port) comes first, then every --ssh-option of the user's, then
// our softer defaults (timeouts, keep-alives), which theirs override. Nothing of theirs is
// dropped or replaced; ~/.ssh/config still applies. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ddp::launch::many_hosts {

struct SshSettings {
  std::string program = "ssh";
  std::optional<int> port;           // --ssh-port
  std::vector<std::string> options;  // --ssh-option OPT (each becomes -o OPT)
  int fanout = 32;                   // --ssh-fanout: connections opened at once
  double connect_timeout_s = 10;     // ConnectTimeout of the master
};

// ssh -N with ControlMaster=yes (never also -M: both mean "ask", which BatchMode refuses):
// holds the connection, and its socket at control_path, until it is stopped.
std::vector<std::string> ssh_master_argv(const SshSettings& s, const std::string& host,
                                         const std::string& control_path);

// A session over the master: runs remote_command (a shell command line) on host.
std::vector<std::string> ssh_session_argv(const SshSettings& s, const std::string& host,
                                          const std::string& control_path, const std::string& remote_command);

// 'text' for a POSIX shell ('\'' for each quote).
std::string shell_quote(const std::string& text);

}  // namespace ddp::launch::many_hosts
