// One multiplexed OpenSSH connection per remote host, opened in parallel (at most
// SshSettings::fanout at once) before anything starts, and closed (the masters stopped,
// their socket folder removed) on destruction. An unreachable host, or one where the
// probe command fails, is an error naming every such host with ssh's own words (or, for an
// elastic job, a host left out). The masters are children in an os::ChildSet on this object's
// own loop, which open() runs: a master is settled when its socket appears (an inotify watch on
// their folder), when it ends, or at its limit; nothing polls.
// Blocks in open() and in the destructor (SIGTERM to the masters, then their ends); single-threaded.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "launcher/os/child_registry.hpp"
#include "launcher/os/child_set.hpp"
#include "launcher/os/process.hpp"
#include "launcher/many_hosts/ssh_command.hpp"

namespace ddp::launch::many_hosts {

class SshConnections {
 public:
  // children: the process's registry, which the masters start through. env: the environment
  // ssh runs with ("K=V" entries); ssh is found on its PATH.
  SshConnections(os::ChildRegistry& children, SshSettings settings, std::vector<std::string> env,
                 const std::string& path_env);
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
  struct Master {  // masters_[i] is child i of children_
    std::string host, control_path;
    bool connected = false;
  };
  struct Pending {  // a master still connecting
    Clock::time_point since;
    std::string said;                     // its output so far (the last of it)
    bool late = false;                    // no socket in time: killed, its end awaited
    std::optional<os::ExitStatus> ended;  // reaped, and its output read to the end
  };
  const Master& master(const std::string& host) const;
  // Starts the master of `host` (appended to masters_, pending_ until settled).
  void start_master(const std::string& host);
  // True once master i is connected (its socket exists) or has failed: ended, or no socket
  // after `limit` (then killed, and settled once it ended); a failure is appended to unreachable
  // as (host, ssh's last words).
  bool settled(size_t i, Clock::duration limit, std::vector<std::pair<std::string, std::string>>& unreachable);

  SshSettings settings_;
  std::vector<std::string> env_;
  std::string ssh_path_, dir_;
  std::vector<Master> masters_;
  std::map<size_t, Pending> pending_;  // by master
  boost::asio::io_context loop_;
  os::ChildSet children_;  // the masters
  double connect_seconds_ = 0;
};

}  // namespace ddp::launch::many_hosts
