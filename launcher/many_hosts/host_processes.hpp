// Runs one process per host (an ssh session, or the local agent) as an os::ChildSet on its own
// Asio loop: their stdout and stderr reach the launcher's with the host's prefix (HostOutput),
// a stop signal (SIGINT, SIGTERM, SIGHUP) stops them all, and each end is reported as it happens.
// How a stop is asked depends on what runs: kCloseStdin (agents stop when their stdin, the
// ssh session, ends; the stop's reason goes first, as one line, many_hosts::plan::encode_stop_message)
// or kTerminate (SIGTERM to each process group); a second signal, or the stop deadline,
// SIGKILLs them. Blocks in run(); single-threaded.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>

#include "launcher/os/child_set.hpp"
#include "launcher/os/process.hpp"
#include "launcher/many_hosts/host_output.hpp"

namespace ddp::launch::many_hosts {

enum class StopBy { kCloseStdin, kTerminate };

struct HostProcessesOutcome {
  std::vector<os::ExitStatus> status;  // per host, in list order
  std::vector<bool> ended_in_stop;     // ended after the stop began
  int stop_signal = 0;                 // the first stop signal received (0: none)
};

class HostProcesses {
 public:
  using OnEnd = std::function<void(size_t, const os::ExitStatus&, bool)>;

  // children: the process's registry, which the processes start through.
  HostProcesses(std::vector<std::string> hosts, os::ChildRegistry& children);
  ~HostProcesses();  // SIGKILLs and reaps whatever still runs
  HostProcesses(const HostProcesses&) = delete;
  HostProcesses& operator=(const HostProcesses&) = delete;

  // Starts host i's process (spec's stdio fds are set here); stdin_data is written to its
  // stdin, which stays open while it runs when keep_stdin_open. Throws LaunchError.
  void start(size_t i, os::SpawnSpec spec, const std::string& stdin_data, bool keep_stdin_open);

  // Until every started process ended. on_end(i, status, in_stop) is called at each end.
  // stop_deadline_s: after a stop began, how long before the rest are SIGKILLed.
  HostProcessesOutcome run(StopBy stop_by, double stop_deadline_s, const OnEnd& on_end);

  // Begins the stop from outside a signal, after delay_s (e.g. once one host's agent
  // failed: the others get that long to end on their own, with the job's root cause);
  // reason: why, as the agents are told it ("host gpu2 (node rank 1) was lost: ..."). The
  // earliest stop wins, with its reason.
  void request_stop(double delay_s, std::string reason);

 private:
  // Host `host`'s output, with its prefix, and the end of child `child`.
  os::ChildEvents relay(size_t host, size_t child);
  void wait_for_signal(boost::asio::signal_set& signals);
  void on_signal(int signo);
  void on_exit(size_t child, const os::ExitStatus& status);
  void begin_stop(const std::string& reason);

  std::vector<std::string> hosts_;
  HostOutput out_, err_;
  boost::asio::io_context loop_;
  os::ChildSet children_;
  std::vector<size_t> host_of_;           // child id -> host index
  boost::asio::steady_timer stop_timer_;  // request_stop's delay
  std::optional<std::chrono::steady_clock::time_point> stop_at_;
  std::string stop_reason_;
  // One run's state.
  StopBy stop_by_ = StopBy::kTerminate;
  std::chrono::steady_clock::duration stop_deadline_{};
  const OnEnd* on_end_ = nullptr;
  HostProcessesOutcome outcome_;
  bool stopping_ = false;
  bool killed_ = false;
};

}  // namespace ddp::launch::many_hosts
