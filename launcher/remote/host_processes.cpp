#include "launcher/remote/host_processes.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>

#include "launcher/hosts/agent_plan.hpp"
#include "launcher/os/signal_fd.hpp"
#include "launcher/worker/output.hpp"

namespace ddp::launch::remote {

struct HostProcesses::Child {
  pid_t pid = -1;
  bool running = false;
  os::UniqueFd stdin_w, out_r, err_r;
  std::optional<os::ExitStatus> status;
  bool in_stop = false;
};

namespace {

using Clock = std::chrono::steady_clock;

void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Reads what fd has now; false at EOF or on an error (the fd is then closed).
bool drain(os::UniqueFd& fd, HostOutput& relay, int source, int to) {
  char buf[65536];
  for (;;) {
    const ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      worker::write_all(to, relay.add(source, std::string_view(buf, static_cast<size_t>(n))));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    worker::write_all(to, relay.finish(source));
    fd.reset();
    return false;
  }
}

}  // namespace

HostProcesses::HostProcesses(std::vector<std::string> hosts)
    : hosts_(std::move(hosts)), children_(hosts_.size()), out_(host_prefixes(hosts_)), err_(host_prefixes(hosts_)) {}

HostProcesses::~HostProcesses() {
  for (auto& c : children_)
    if (c.running) {
      os::signal_group(c.pid, SIGKILL);
      os::wait_for(c.pid);
    }
}

void HostProcesses::start(size_t i, os::SpawnSpec spec, const std::string& stdin_data, bool keep_stdin_open) {
  Child& c = children_[i];
  os::Pipe in = os::make_pipe(), out = os::make_pipe(), err = os::make_pipe();
  spec.stdin_fd = in.read_end.get();
  spec.stdout_fd = out.write_end.get();
  spec.stderr_fd = err.write_end.get();
  c.pid = os::spawn_worker(spec);
  c.running = true;
  c.stdin_w = std::move(in.write_end);
  c.out_r = std::move(out.read_end);
  c.err_r = std::move(err.read_end);
  set_nonblocking(c.out_r.get());
  set_nonblocking(c.err_r.get());
  if (!stdin_data.empty()) worker::write_all(c.stdin_w.get(), stdin_data);
  if (!keep_stdin_open) c.stdin_w.reset();
}

void HostProcesses::request_stop(double delay_s, std::string reason) {
  const auto at = Clock::now() + std::chrono::milliseconds(static_cast<long long>(delay_s * 1000));
  if (stop_at_ && at >= *stop_at_) return;
  stop_at_ = at;
  stop_reason_ = std::move(reason);
}

HostProcessesOutcome HostProcesses::run(StopBy stop_by, double stop_deadline_s,
                                        const std::function<void(size_t, const os::ExitStatus&, bool)>& on_end) {
  os::SignalFd signals({SIGINT, SIGTERM, SIGHUP, SIGCHLD});
  HostProcessesOutcome outcome;
  outcome.status.resize(children_.size());
  outcome.ended_in_stop.resize(children_.size());
  bool stopping = false, killed = false;
  Clock::time_point deadline{};
  auto begin_stop = [&](const std::string& reason) {
    stopping = true;
    deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(stop_deadline_s * 1000));
    const std::string message = hosts::encode_stop_message(reason);
    for (auto& c : children_) {
      if (!c.running) continue;
      if (stop_by == StopBy::kTerminate) {
        os::signal_group(c.pid, SIGTERM);
        continue;
      }
      // Never blocks: a session that reads nothing gets the plain end of its stdin.
      if (c.stdin_w.valid() && fcntl(c.stdin_w.get(), F_SETFL, fcntl(c.stdin_w.get(), F_GETFL) | O_NONBLOCK) == 0)
        (void)!write(c.stdin_w.get(), message.data(), message.size());
      c.stdin_w.reset();
    }
  };
  auto kill_all = [&] {
    killed = true;
    for (auto& c : children_)
      if (c.running) os::signal_group(c.pid, SIGKILL);
  };
  for (;;) {
    if (stop_at_ && !stopping && Clock::now() >= *stop_at_) {
      worker::launcher_notice("stopping the other hosts: " + stop_reason_);
      begin_stop(stop_reason_);
    }
    bool any_running = false;
    for (auto& c : children_) any_running = any_running || c.running || c.out_r.valid() || c.err_r.valid();
    if (!any_running) break;
    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
    std::vector<std::pair<size_t, int>> which;  // (child, 1 out / 2 err)
    for (size_t i = 0; i < children_.size(); ++i) {
      if (children_[i].out_r.valid()) fds.push_back({children_[i].out_r.get(), POLLIN, 0}), which.emplace_back(i, 1);
      if (children_[i].err_r.valid()) fds.push_back({children_[i].err_r.get(), POLLIN, 0}), which.emplace_back(i, 2);
    }
    poll(fds.data(), fds.size(), 100);
    for (size_t k = 1; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      auto [i, stream] = which[k - 1];
      Child& c = children_[i];
      if (stream == 1) drain(c.out_r, out_, static_cast<int>(i), STDOUT_FILENO);
      else drain(c.err_r, err_, static_cast<int>(i), STDERR_FILENO);
    }
    for (int s : signals.take()) {
      if (s == SIGCHLD) continue;
      if (outcome.stop_signal == 0) outcome.stop_signal = s;
      if (!stopping) {
        worker::launcher_notice("stopping every host (" + signal_name(s) + "); again to kill at once");
        begin_stop("the launch was stopped by " + signal_name(s) + " on the launching machine");
      } else if (!killed) {
        worker::launcher_notice("killing the hosts' sessions (" + signal_name(s) + " again)");
        kill_all();
      }
    }
    if (stopping && !killed && Clock::now() > deadline) {
      worker::launcher_notice("the hosts did not stop in time: killing their sessions");
      kill_all();
    }
    for (size_t i = 0; i < children_.size(); ++i) {
      Child& c = children_[i];
      if (!c.running) continue;
      auto st = os::try_reap(c.pid);
      if (!st) continue;
      c.running = false;
      // What it wrote before it ended; a process it left behind may hold the pipes: not waited for.
      if (c.out_r.valid() && drain(c.out_r, out_, static_cast<int>(i), STDOUT_FILENO)) c.out_r.reset();
      if (c.err_r.valid() && drain(c.err_r, err_, static_cast<int>(i), STDERR_FILENO)) c.err_r.reset();
      worker::write_all(STDOUT_FILENO, out_.finish(static_cast<int>(i)));
      worker::write_all(STDERR_FILENO, err_.finish(static_cast<int>(i)));
      c.stdin_w.reset();
      outcome.status[i] = *st;
      outcome.ended_in_stop[i] = stopping;
      on_end(i, *st, stopping);
    }
  }
  return outcome;
}

}  // namespace ddp::launch::remote
