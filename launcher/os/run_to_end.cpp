#include "launcher/os/run_to_end.hpp"

#include <signal.h>

#include "launcher/base/launch_error.hpp"
#include "launcher/os/child_events.hpp"

namespace ddp::launch::os {
namespace {

using Clock = std::chrono::steady_clock;

struct Running {
  size_t index;
  pid_t pid;
  UniqueFd pidfd;  // invalid without pidfds
};

}  // namespace

std::vector<RunEnd> run_to_end(ChildRegistry& children, const std::vector<SpawnSpec>& specs,
                               std::chrono::milliseconds limit) {
  std::vector<RunEnd> ends(specs.size());
  std::vector<Running> running;
  for (size_t i = 0; i < specs.size(); ++i) {
    try {
      const pid_t pid = children.spawn(specs[i]);
      running.push_back({i, pid, open_pidfd(pid)});
    } catch (const LaunchError& e) {  // said in its end: the others run on
      ends[i].error = e.what();
    }
  }
  const auto deadline = Clock::now() + limit;
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      if (std::optional<ExitStatus> status = children.reap(it->pid)) {
        ends[it->index].status = status;
        it = running.erase(it);
      } else {
        ++it;
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (running.empty() || left.count() <= 0) break;
    std::vector<const UniqueFd*> fds;
    for (const Running& r : running) fds.push_back(&r.pidfd);
    wait_readable(fds, left);
  }
  for (const Running& r : running) {  // late: killed, reaped
    signal_group(r.pid, SIGKILL);
    children.wait(r.pid);
    ends[r.index].timed_out = true;
  }
  return ends;
}

}  // namespace ddp::launch::os
