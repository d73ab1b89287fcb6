// One multiplexed OpenSSH connection per remote host, opened in parallel (at most
// SshSettings::fanout at once) before anything starts, and closed (the masters stopped,
// their socket folder removed) on destruction. An unreachable host, or one where the
// probe command fails, is an error naming every such host with ssh's own words (or, for an
// elastic job, a host left out).
// Blocks in open(); single-threaded.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/os/process.hpp"
#include "launcher/remote/ssh_command.hpp"

namespace ddp::launch::remote {

class SshConnections {
 public:
  // env: the environment ssh runs with ("K=V" entries); ssh is found on its PATH.
  SshConnections(SshSettings settings, std::vector<std::string> env, const std::string& path_env);
  ~SshConnections();
  SshConnections(const SshConnections&) = delete;
  SshConnections& operator=(const SshConnections&) = delete;

  // Connects to each host. Throws LaunchError(kRendezvousFailed) naming the unreachable
  // ones, or (keep_going: an elastic job) returns them, each as (host, ssh's words).
  std::vector<std::pair<std::string, std::string>> open(const std::vector<std::string>& hosts, bool keep_going = false);

  // The session that runs remote_command on host, over its connection.
  os::SpawnSpec session(const std::string& host, const std::string& remote_command) const;

  double connect_seconds() const { return connect_seconds_; }  // the whole open(), wall time

 private:
  using Clock = std::chrono::steady_clock;
  struct Master {
    std::string host, control_path;
    pid_t pid = -1;
  };
  struct Pending;  // a master still connecting (ssh_connections.cpp)
  const Master& master(const std::string& host) const;
  // Starts the master of hosts[index] (appended to masters_); its stderr is read if it fails.
  Pending start_master(size_t index, const std::string& host);
  // True once p's master is connected (its socket exists) or has failed: ended, or no
  // socket after `limit` (then killed); a failure is appended to unreachable as (host,
  // ssh's last words).
  bool settled(Pending& p, Clock::duration limit, std::vector<std::pair<std::string, std::string>>& unreachable);

  SshSettings settings_;
  std::vector<std::string> env_;
  std::string ssh_path_, dir_;
  std::vector<Master> masters_;
  double connect_seconds_ = 0;
};

}  // namespace ddp::launch::remote
