#include "launcher/os/run_capture.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "launcher/os/fd_io.hpp"

extern char** environ;

namespace ddp::launch::os {

Captured run_captured(ChildRegistry& children, SpawnSpec spec, std::chrono::milliseconds limit) {
  Pipe pipe = make_pipe();
  spec.stdout_fd = pipe.write_end.get();
  spec.stderr_fd = pipe.write_end.get();
  const pid_t pid = children.spawn(spec);
  pipe.write_end.reset();  // the helper holds the only write end: EOF when it ends
  Captured out;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  char buf[4096];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      out.timed_out = true;
      signal_group(pid, SIGKILL);
      break;
    }
    pollfd p{pipe.read_end.get(), POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked above
    const ssize_t n = read_some(pipe.read_end.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the helper (and whatever it started with the pipe) ended
    out.output.append(buf, static_cast<size_t>(n));
    if (out.output.size() > kCapturedBytes) out.output.erase(0, out.output.size() - kCapturedBytes);
  }
  out.status = children.wait(pid);
  return out;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) out.emplace_back(*e);
  return out;
}

}  // namespace ddp::launch::os
