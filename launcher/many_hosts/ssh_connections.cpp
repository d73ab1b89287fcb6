#include "launcher/many_hosts/ssh_connections.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>

#include <boost/asio/buffer.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"
#include "launcher/os/child_events.hpp"
#include "launcher/os/temp_dir.hpp"

namespace ddp::launch::many_hosts {
namespace asio = boost::asio;
namespace {

constexpr size_t kKeptOutput = 4096;  // of a connecting master's output: its last words are enough

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

SshConnections::SshConnections(os::ChildRegistry& children, SshSettings settings, std::vector<std::string> env,
                               const std::string& path_env)
    : settings_(std::move(settings)), env_(std::move(env)), children_(loop_, children) {
  ssh_path_ = os::resolve_program(settings_.program, path_env);
  // /tmp, not TMPDIR: short, as a socket path must fit in 108 bytes.
  std::optional<std::string> dir = os::make_temp_dir("/tmp/ddp-ssh-");
  if (!dir) throw LaunchError(exit_code::kIoError, "cannot create a folder in /tmp for the ssh sockets");
  dir_ = *dir;
}

SshConnections::~SshConnections() {
  children_.kill_and_reap(SIGTERM);
  for (const auto& m : masters_) unlink(m.control_path.c_str());
  rmdir(dir_.c_str());
}

void SshConnections::start_master(const std::string& host) {
  const size_t i = masters_.size();
  masters_.push_back(Master{host, fmt::format("{}/{}", dir_, i)});
  pending_[i] = Pending{Clock::now(), "", false, std::nullopt};
  os::SpawnSpec spec{ssh_path_, ssh_master_argv(settings_, host, masters_[i].control_path), env_};
  os::ChildEvents events;
  events.data = [this, i](int, std::string_view chunk) {
    auto p = pending_.find(i);
    if (p == pending_.end()) return;
    p->second.said.append(chunk);
    if (p->second.said.size() > 2 * kKeptOutput) p->second.said.erase(0, p->second.said.size() - kKeptOutput);
  };
  events.exited = [this, i](const os::ExitStatus& status) {  // its last words first, then settled
    children_.close_output(i, [this, i, status] {
      if (auto p = pending_.find(i); p != pending_.end()) p->second.ended = status;
    });
  };
  children_.spawn(children_.add(spec, std::move(events)), spec);
  children_.read_output();
}

bool SshConnections::settled(size_t i, Clock::duration limit,
                             std::vector<std::pair<std::string, std::string>>& unreachable) {
  Master& m = masters_[i];
  Pending& p = pending_.at(i);
  if (!p.late && exists(m.control_path)) return m.connected = true;
  if (!p.late && Clock::now() - p.since > limit) {
    p.late = true;
    os::signal_group(children_.pid(i), SIGKILL);
  }
  if (!p.ended) return false;
  unreachable.emplace_back(m.host,
                           p.late ? "no answer in time" : last_line(p.said, "ssh ended with " + p.ended->describe()));
  return true;
}

std::vector<std::pair<std::string, std::string>> SshConnections::open(const std::vector<std::string>& hosts,
                                                                      bool keep_going) {
  const auto started = Clock::now();
  std::vector<std::pair<std::string, std::string>> unreachable;
  size_t next = 0;
  const auto limit = std::chrono::milliseconds(static_cast<long long>((settings_.connect_timeout_s + 5) * 1000));
  // The loop wakes for a socket in dir_ (the folder's watch; without inotify, every 20 ms), a
  // master's output or end, or the first limit.
  os::FolderWatch sockets(dir_);
  std::optional<asio::posix::stream_descriptor> watch;
  if (sockets.fd().valid()) watch.emplace(loop_, sockets.take().release());
  asio::steady_timer timer(loop_);
  bool watch_armed = false;
  while (next < hosts.size() || !pending_.empty()) {
    for (; next < hosts.size() && static_cast<int>(pending_.size()) < settings_.fanout; ++next)
      start_master(hosts[next]);
    for (auto it = pending_.begin(); it != pending_.end();)
      it = settled(it->first, limit, unreachable) ? pending_.erase(it) : std::next(it);
    if (pending_.empty()) continue;
    auto wake = Clock::time_point::max();
    for (const auto& [i, p] : pending_)
      if (!p.late) wake = std::min(wake, p.since + limit);  // a late one is killed: its end wakes the loop
    timer.expires_at(watch ? wake : std::min(wake, Clock::now() + std::chrono::milliseconds(20)));
    timer.async_wait([](const boost::system::error_code&) {});
    if (watch && !watch_armed) {
      watch_armed = true;
      watch->async_wait(asio::posix::descriptor_base::wait_read, [&](const boost::system::error_code& ec) {
        watch_armed = false;
        if (ec) return;
        std::array<char, 4096> events;  // read only to be drained: the names are looked at in settled()
        boost::system::error_code read_ec;
        watch->non_blocking(true, read_ec);
        while (!read_ec) watch->read_some(asio::buffer(events), read_ec);
      });
    }
    loop_.run_one();
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
    if (m.host == host && m.connected) return m;
  throw LaunchError(exit_code::kInternalError, "no ssh connection to " + host);
}

os::SpawnSpec SshConnections::session(const std::string& host, const std::string& remote_command) const {
  const Master& m = master(host);
  return os::SpawnSpec{ssh_path_, ssh_session_argv(settings_, host, m.control_path, remote_command), env_};
}

}  // namespace ddp::launch::many_hosts
