// StandbyPool: standbys started as children of the pool's ChildSet (the channel inherited),
// their readiness byte and output read on the loop, the handoff (os::send_handoff), their ends.

#include "contract/standby_handoff.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/standby_channel.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/warm/standby_pool.hpp"
#include "launcher/worker/python_hooks.hpp"
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/write.hpp>
#include <filesystem>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

namespace ddp::launch::warm {

namespace {
constexpr size_t kOutputTail = 4096;  // what the give-up notice shows of a standby's output
}  // namespace

struct StandbyPool::Standby {
  Standby(boost::asio::io_context& io, int fd) : channel(io, fd) {}
  int local_rank = 0;
  pid_t pid = -1;
  size_t child = 0;  // its id in the pool's ChildSet
  std::string executable;
  std::vector<std::string> slot_argv;  // the worker slot's argv it was started for
  boost::asio::posix::stream_descriptor channel;
  std::string output_tail;  // the last of its stdout and stderr, until the handoff
  char ready_byte = 0;
  bool prepared = false;  // sent a prepare frame: ready only at its standby point
  bool ready = false;
};

StandbyPool::StandbyPool(boost::asio::io_context& io, os::ChildRegistry& children, os::Watchdog& watchdog,
                         StandbyPlan plan, contain::Containment* containment, report::EventLog* events)
    : io_(io),
      watchdog_(watchdog),
      containment_(containment),
      plan_(std::move(plan)),
      events_(events),
      dev_null_(os::open_dev_null()),
      children_(io, children) {}

// Teardown logs nothing: the borrowed event log may already be gone (the multi-node agent
// destroys its log before its Supervisor, which owns this pool).
StandbyPool::~StandbyPool() {
  events_ = nullptr;
  clear();
}

size_t StandbyPool::ready_count() const {
  size_t n = 0;
  for (const auto& [rank, s] : standbys_) n += s->ready ? 1 : 0;
  return n;
}

void StandbyPool::log(const char* state, const Standby& s, int rank) {
  if (!events_) return;
  std::vector<report::EventField> fields{
      {"state", state}, {"pid", static_cast<long>(s.pid)}, {"local_rank", s.local_rank}};
  if (rank >= 0) fields.emplace_back("rank", rank);
  if (s.prepared) fields.emplace_back("at_point", true);
  events_->write("standby", fields);
}

void StandbyPool::log_exit(const Standby& s, const os::ExitStatus& status) {
  if (!events_) return;
  std::vector<report::EventField> fields{
      {"state", "exited"}, {"pid", static_cast<long>(s.pid)}, {"local_rank", s.local_rank}};
  if (status.vanished) fields.emplace_back("status", "unknown");
  else if (status.signaled) fields.emplace_back("signal", std::string(signal_name(status.signal)));
  else fields.emplace_back("exit_code", status.code);
  events_->write("standby", fields);
}

void StandbyPool::fill(const std::vector<worker::WorkerLaunch>& launches) {
  if (plan_.kind == StandbyKind::kNone || retries_.given_up()) return;
  for (const worker::WorkerLaunch& l : launches) {
    slots_[l.local_rank] = Slot{l.spawn.executable, l.spawn.argv, l.spawn.env};
    auto it = standbys_.find(l.local_rank);
    if (it != standbys_.end() &&
        adoptable(plan_, it->second->executable, it->second->slot_argv, l.spawn, it->second->prepared))
      continue;
    if (it != standbys_.end()) kill(*it->second);  // its exit handler starts its replacement
    else start(l.local_rank, slots_[l.local_rank]);
  }
}

void StandbyPool::start(int local_rank, const Slot& slot) {
  os::ChannelPair channel = os::make_channel();
  os::SpawnSpec spec;
  spec.executable = slot.executable;
  spec.argv = standby_argv(plan_, slot.argv, worker::standby_bootstrap_source());
  spec.env = slot.env;  // the slot's: libraries that read it at load time see the worker's values
  spec.env.push_back(fmt::format("{}={}", standby::kFdEnvVar, channel.standby_end.get()));
  if (plan_.kind == StandbyKind::kPython) {
    std::string preload;
    for (const auto& m : plan_.preload) preload += (preload.empty() ? "" : ",") + m;
    spec.env.push_back("DDP_LAUNCH_STANDBY_PRELOAD=" + preload);
  }
  spec.inherit_fd = channel.standby_end.get();
  if (containment_) containment_->prepare_standby(spec);
  auto s = std::make_shared<Standby>(io_, channel.launcher_end.release());
  s->local_rank = local_rank;
  s->executable = slot.executable;
  s->slot_argv = slot.argv;
  s->child = children_.add(spec, events(s));
  try {
    os::StartedWorker started = children_.start(s->child, spec);
    s->pid = started.pid;
    if (containment_) containment_->standby_started(s->pid);
    watchdog_.watch(s->pid);
    children_.confirm(s->child, started);
  } catch (const LaunchError& e) {  // not swallowed: said once; the restarts are cold
    if (s->pid > 0) watchdog_.forget(s->pid);
    console::launcher_notice(fmt::format("cannot start a standby: {}; restarts are cold", e.what()));
    retries_.give_up();
    return;
  }
  standbys_[local_rank] = s;
  log("started", *s);
  if (standby_point_) prepare(s);
  read_ready(s);
  children_.read_output();
}

// A script with a standby point: the standby runs it up to there once its imports are done,
// and is ready only there. The frame is small (the socket takes it at once); a standby that
// died is reaped and replaced.
void StandbyPool::prepare(const std::shared_ptr<Standby>& s) {
  boost::system::error_code ec;
  boost::asio::write(s->channel, boost::asio::buffer(standby::encode_prepare(s->slot_argv)), ec);
  if (ec) return;
  s->prepared = true;
  if (!s->ready) return;  // its readiness byte is still awaited: the read goes on to the point's
  s->ready = false;
  read_ready(s);
}

void StandbyPool::use_standby_point() {
  if (standby_point_ || plan_.kind != StandbyKind::kPython) return;
  standby_point_ = true;
  for (auto& [rank, s] : standbys_) prepare(s);
}

// The readiness byte (a prepared standby's first one says its imports are done: it is ready
// only at its point).
void StandbyPool::read_ready(std::weak_ptr<Standby> weak) {
  auto standby = weak.lock();
  if (!standby) return;
  standby->channel.async_read_some(boost::asio::buffer(&standby->ready_byte, 1),
                                   [this, weak](const boost::system::error_code& ec, size_t n) {
                                     auto s = weak.lock();
                                     if (!s || ec || n != 1) return;
                                     const char at = s->prepared ? standby::kPointByte : standby::kReadyByte;
                                     if (s->ready_byte != at) return read_ready(weak);
                                     s->ready = true;
                                     retries_.ready();
                                     log("ready", *s);
                                   });
}

// Its output (the last kOutputTail bytes are kept for the give-up notice), and its end.
os::ChildEvents StandbyPool::events(const std::shared_ptr<Standby>& standby) {
  std::weak_ptr<Standby> weak = standby;
  os::ChildEvents e;
  e.data = [weak](int, std::string_view chunk) {
    auto s = weak.lock();
    if (!s) return;
    s->output_tail.append(chunk);
    if (s->output_tail.size() > 2 * kOutputTail) s->output_tail.erase(0, s->output_tail.size() - kOutputTail);
  };
  e.exited = [this, weak](const os::ExitStatus& status) {
    if (auto s = weak.lock()) on_exit(s, status);
  };
  return e;
}

std::optional<pid_t> StandbyPool::adopt(const worker::WorkerLaunch& launch) {
  if (retries_.given_up()) return std::nullopt;
  auto it = standbys_.find(launch.local_rank);
  if (it == standbys_.end()) return std::nullopt;
  std::shared_ptr<Standby> s = it->second;
  if (!adoptable(plan_, s->executable, s->slot_argv, launch.spawn, s->prepared)) {
    slots_.erase(launch.local_rank);  // a stale slot: the next fill() says what it is now
    kill(*s);
    return std::nullopt;
  }
  reap();  // one that already died is replaced, not handed a worker
  it = standbys_.find(launch.local_rank);
  if (it == standbys_.end() || it->second != s) return std::nullopt;
  standby::Handoff h{launch.spawn.argv, launch.spawn.env, std::filesystem::current_path().string()};
  const std::array<int, 3> fds{launch.spawn.stdin_fd >= 0 ? launch.spawn.stdin_fd : dev_null_.get(),
                               launch.spawn.stdout_fd >= 0 ? launch.spawn.stdout_fd : STDOUT_FILENO,
                               launch.spawn.stderr_fd >= 0 ? launch.spawn.stderr_fd : STDERR_FILENO};
  std::string error;
  if (!os::send_handoff(s->channel.native_handle(), standby::encode_handoff(h), fds, kHandoffTimeout, &error)) {
    console::launcher_notice(
        fmt::format("standby for local_rank {} (pid {}): {}; starting that worker cold", s->local_rank, s->pid, error));
    kill(*s);
    return std::nullopt;
  }
  log("adopted", *s, launch.rank);
  standbys_.erase(it);  // the supervisor owns it now (still under the watchdog)
  children_.release(s->child);
  s->channel.close();
  return s->pid;
}

void StandbyPool::kill(Standby& s) {
  if (s.pid > 0) os::signal_group(s.pid, SIGKILL);
}

// Standby s was reaped: it leaves the pool, and once the rest of its output is read, the give-up
// notice if too many died early, and its replacement.
void StandbyPool::on_exit(const std::shared_ptr<Standby>& s, const os::ExitStatus& status) {
  auto it = standbys_.find(s->local_rank);
  if (it != standbys_.end() && it->second == s) standbys_.erase(it);
  watchdog_.forget(s->pid);
  log_exit(*s, status);
  children_.close_output(s->child, [this, s, status] { after_exit(*s, status); });
}

void StandbyPool::after_exit(const Standby& s, const os::ExitStatus& status) {
  if (retries_.exited(s.ready)) {
    std::string tail =
        s.output_tail.size() > kOutputTail ? s.output_tail.substr(s.output_tail.size() - kOutputTail) : s.output_tail;
    console::launcher_notice(fmt::format(
        "standbys keep dying before they are ready ({} in a row; the last, for local_rank {}, ended with {}): "
        "restarts are cold from now on{}{}",
        StandbyRetries::kMaxEarlyDeaths, s.local_rank, status.describe(),
        tail.empty() ? "" : "; its output ended with:\n", tail));
    for (auto& [rank, other] : standbys_) kill(*other);  // warming up in vain: each exit is handled as it comes
  }
  // Its replacement: the same slot's spec (executable, argv, env) as before.
  auto slot = slots_.find(s.local_rank);
  if (retries_.given_up() || standbys_.count(s.local_rank) || slot == slots_.end()) return;
  start(s.local_rank, slot->second);
}

void StandbyPool::clear() {
  children_.kill_and_reap();
  for (auto& [rank, s] : standbys_) {
    watchdog_.forget(s->pid);
    log_exit(*s, children_.status(s->child).value_or(os::ExitStatus::unknown()));
  }
  standbys_.clear();
  slots_.clear();
}

}  // namespace ddp::launch::warm
