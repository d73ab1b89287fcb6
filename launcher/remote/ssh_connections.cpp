#include "launcher/remote/ssh_connections.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"
#include "launcher/os/child_events.hpp"
#include "launcher/os/temp_dir.hpp"

namespace ddp::launch::remote {
namespace {

std::string read_available(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

// ssh's last non-empty line, or a fallback.
std::string last_line(const std::string& text, const std::string& fallback) {
  std::string last;
  for (const auto& line : split(text, '\n'))
    if (!trim(line).empty()) last = trim(line);
  return last.empty() ? fallback : last;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

SshConnections::SshConnections(SshSettings settings, std::vector<std::string> env, const std::string& path_env)
    : settings_(std::move(settings)), env_(std::move(env)) {
  ssh_path_ = os::resolve_program(settings_.program, path_env);
  // /tmp, not TMPDIR: short, as a socket path must fit in 108 bytes.
  std::optional<std::string> dir = os::make_temp_dir("/tmp/ddp-ssh-");
  if (!dir) throw LaunchError(exit_code::kIoError, "cannot create a folder in /tmp for the ssh sockets");
  dir_ = *dir;
}

SshConnections::~SshConnections() {
  for (const auto& m : masters_)
    if (m.pid > 0) os::signal_group(m.pid, SIGTERM);
  for (const auto& m : masters_)
    if (m.pid > 0) {
      os::wait_for(m.pid);
      unlink(m.control_path.c_str());
    }
  rmdir(dir_.c_str());
}

struct SshConnections::Pending {
  size_t index;  // in masters_
  os::UniqueFd err;
  Clock::time_point since;
  os::UniqueFd pidfd;  // readable once the master has ended (invalid without pidfds)
};

SshConnections::Pending SshConnections::start_master(size_t index, const std::string& host) {
  Master m{host, fmt::format("{}/{}", dir_, index), -1};
  os::Pipe err = os::make_pipe();
  fcntl(err.read_end.get(), F_SETFL, O_NONBLOCK);
  os::SpawnSpec spec{
      ssh_path_, ssh_master_argv(settings_, m.host, m.control_path), env_, err.write_end.get(), err.write_end.get(), -1,
      -1};
  m.pid = os::spawn_worker(spec);
  masters_.push_back(m);
  return Pending{masters_.size() - 1, std::move(err.read_end), Clock::now(), os::open_pidfd(m.pid)};
}

bool SshConnections::settled(Pending& p, Clock::duration limit,
                             std::vector<std::pair<std::string, std::string>>& unreachable) {
  Master& m = masters_[p.index];
  if (exists(m.control_path)) return true;
  std::optional<os::ExitStatus> st = os::try_reap(m.pid);
  const bool late = Clock::now() - p.since > limit;
  if (!st && !late) return false;
  if (!st) {
    os::signal_group(m.pid, SIGKILL);
    os::wait_for(m.pid);
  }
  m.pid = -1;
  unreachable.emplace_back(
      m.host, last_line(read_available(p.err.get()), st ? "ssh ended with " + st->describe() : "no answer in time"));
  return true;
}

std::vector<std::pair<std::string, std::string>> SshConnections::open(const std::vector<std::string>& hosts,
                                                                      bool keep_going) {
  const auto started = Clock::now();
  std::vector<Pending> pending;
  std::vector<std::pair<std::string, std::string>> unreachable;
  size_t next = 0;
  const auto limit = std::chrono::milliseconds(static_cast<long long>((settings_.connect_timeout_s + 5) * 1000));
  // A master is settled when its socket appears in dir_ (the folder's watch) or it ends (its
  // pidfd), or at its limit: the wait wakes for the first of these, nothing polls.
  const os::FolderWatch sockets(dir_);
  while (next < hosts.size() || !pending.empty()) {
    for (; next < hosts.size() && static_cast<int>(pending.size()) < settings_.fanout; ++next)
      pending.push_back(start_master(next, hosts[next]));
    for (auto it = pending.begin(); it != pending.end();)
      it = settled(*it, limit, unreachable) ? pending.erase(it) : std::next(it);
    if (pending.empty()) continue;
    std::vector<const os::UniqueFd*> events{&sockets.fd()};
    auto first_limit = Clock::time_point::max();
    for (const Pending& p : pending) {
      events.push_back(&p.pidfd);
      first_limit = std::min(first_limit, p.since + limit);
    }
    os::wait_readable(events, std::chrono::ceil<std::chrono::milliseconds>(first_limit - Clock::now()));
    sockets.drain();
  }
  connect_seconds_ = std::chrono::duration<double>(Clock::now() - started).count();
  if (unreachable.empty() || keep_going) return unreachable;
  std::vector<std::string> failures;
  for (const auto& [host, words] : unreachable) failures.push_back(fmt::format("{}: {}", host, words));
  throw LaunchError(exit_code::kRendezvousFailed,
                    fmt::format("cannot reach {} of {} host(s) over ssh: {}; check the name, that sshd runs "
                                "there and that a key logs in without a password (ssh -o BatchMode=yes HOST "
                                "true), or leave the host out with --exclude",
                                failures.size(), hosts.size(), fmt::join(failures, "; ")));
}

const SshConnections::Master& SshConnections::master(const std::string& host) const {
  for (const auto& m : masters_)
    if (m.host == host && m.pid > 0) return m;
  throw LaunchError(exit_code::kInternalError, "no ssh connection to " + host);
}

os::SpawnSpec SshConnections::session(const std::string& host, const std::string& remote_command) const {
  const Master& m = master(host);
  return os::SpawnSpec{ssh_path_, ssh_session_argv(settings_, host, m.control_path, remote_command), env_};
}

}  // namespace ddp::launch::remote
