

#include "launcher/console/notice.hpp"
#include "launcher/many_hosts/plan/agent_plan.hpp"
#include "launcher/many_hosts/host_processes.hpp"
#include <signal.h>
#include <unistd.h>
#include <utility>

namespace ddp::launch::many_hosts {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration after_seconds(double s) { return std::chrono::milliseconds(static_cast<long long>(s * 1000)); }

}  // namespace

HostProcesses::HostProcesses(std::vector<std::string> hosts, os::ChildRegistry& children)
    : hosts_(std::move(hosts)),
      out_(host_prefixes(hosts_)),
      err_(host_prefixes(hosts_)),
      children_(loop_, children),
      stop_timer_(loop_) {}

HostProcesses::~HostProcesses() = default;  // the child set SIGKILLs and reaps what still runs

// Host i's output, with its prefix, to the launcher's stdout and stderr; child's end.
os::ChildEvents HostProcesses::relay(size_t host, size_t child) {
  const int source = static_cast<int>(host);
  os::ChildEvents output;
  output.data = [this, source](int stream, std::string_view chunk) {
    if (stream == 1) console::write_all(STDOUT_FILENO, out_.add(source, chunk));
    else console::write_all(STDERR_FILENO, err_.add(source, chunk));
  };
  output.end = [this, source](int stream) {
    if (stream == 1) console::write_all(STDOUT_FILENO, out_.finish(source));
    else console::write_all(STDERR_FILENO, err_.finish(source));
  };
  output.exited = [this, child](const os::ExitStatus& status) { on_exit(child, status); };
  return output;
}

void HostProcesses::start(size_t i, os::SpawnSpec spec, const std::string& stdin_data, bool keep_stdin_open) {
  const size_t id = children_.add(spec, relay(i, children_.size()), true);  // ids are 0, 1, ...: the next is size()
  host_of_.push_back(i);
  children_.spawn(id, spec);  // throws when it never ran (then nothing of it is left to read or reap)
  if (!stdin_data.empty()) children_.write_stdin(id, stdin_data);
  if (!keep_stdin_open) children_.close_stdin(id);
}

void HostProcesses::request_stop(double delay_s, std::string reason) {
  const auto at = Clock::now() + after_seconds(delay_s);
  if (stop_at_ && at >= *stop_at_) return;
  stop_at_ = at;
  stop_reason_ = std::move(reason);
  stop_timer_.expires_at(at);
  stop_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    console::launcher_notice("stopping the other hosts: " + stop_reason_);
    begin_stop(stop_reason_);
  });
}

HostProcessesOutcome HostProcesses::run(StopBy stop_by, double stop_deadline_s, const OnEnd& on_end) {
  stop_by_ = stop_by;
  stop_deadline_ = after_seconds(stop_deadline_s);
  on_end_ = &on_end;
  outcome_ = {};
  outcome_.status.resize(hosts_.size());
  outcome_.ended_in_stop.resize(hosts_.size());
  boost::asio::signal_set signals(loop_, SIGINT, SIGTERM, SIGHUP);
  wait_for_signal(signals);
  children_.reap();  // ended before the loop ran
  children_.read_output();
  while (children_.running_count() > 0 || children_.output_open()) loop_.run_one();
  signals.cancel();
  stop_timer_.cancel();
  loop_.poll();  // the cancelled waits end while what they use is alive
  on_end_ = nullptr;
  return std::move(outcome_);
}

void HostProcesses::wait_for_signal(boost::asio::signal_set& signals) {
  signals.async_wait([this, &signals](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    on_signal(signo);
    wait_for_signal(signals);
  });
}

// The first stop signal stops every host; one more, while they stop, kills them at once.
void HostProcesses::on_signal(int signo) {
  if (outcome_.stop_signal == 0) outcome_.stop_signal = signo;
  if (!stopping_) {
    console::launcher_notice("stopping every host (" + signal_name(signo) + "); again to kill at once");
    begin_stop("the launch was stopped by " + signal_name(signo) + " on the launching machine");
  } else if (!killed_) {
    console::launcher_notice("killing the hosts' sessions (" + signal_name(signo) + " again)");
    killed_ = true;
    children_.kill();
  }
}

void HostProcesses::begin_stop(const std::string& reason) {
  stopping_ = true;
  auto late = [this](size_t) {  // the child set SIGKILLs them next
    if (!killed_) console::launcher_notice("the hosts did not stop in time: killing their sessions");
    killed_ = true;
  };
  if (stop_by_ == StopBy::kTerminate) return children_.begin_stop(SIGTERM, stop_deadline_, late);
  const std::string message = many_hosts::plan::encode_stop_message(reason);
  children_.begin_stop([&](size_t id) { children_.close_stdin(id, message); }, stop_deadline_, late);
}

// What the host's process wrote before it ended goes out first, then its end is reported.
void HostProcesses::on_exit(size_t child, const os::ExitStatus& status) {
  const bool in_stop = stopping_;
  children_.close_output(child, [this, child, status, in_stop] {
    const size_t i = host_of_[child];
    children_.close_stdin(child);
    outcome_.status[i] = status;
    outcome_.ended_in_stop[i] = in_stop;
    (*on_end_)(i, status, in_stop);
  });
}

}  // namespace ddp::launch::many_hosts
