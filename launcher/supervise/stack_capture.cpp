

#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/fd_io.hpp"
#include "launcher/os/process.hpp"
#include "launcher/supervise/stack_capture.hpp"
#include <fmt/format.h>
#include <optional>
#include <signal.h>
#include <thread>
#include <vector>

namespace ddp::launch::supervise {
namespace {

// The first of eu-stack and gdb found on PATH, with its arguments for pid.
std::optional<os::SpawnSpec> stack_tool(long pid, const std::string& path_env) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> tools = {
      {"eu-stack", {"eu-stack", "-i", "-p", std::to_string(pid)}},
      {"gdb", {"gdb", "-p", std::to_string(pid), "-batch", "-nx", "-ex", "thread apply all bt"}}};
  for (const auto& [name, argv] : tools) {
    try {
      os::SpawnSpec spec;
      spec.executable = os::resolve_program(name, path_env);
      spec.argv = argv;
      spec.env = {"PATH=" + path_env, "LC_ALL=C"};
      return spec;
    } catch (const LaunchError&) {  // not installed: try the next tool
    }
  }
  return std::nullopt;
}

// Runs the tool with its output appended to fd; kills it after kCaptureTimeout.
std::string run_tool(os::SpawnSpec spec, int fd) {
  spec.stdout_fd = fd;
  spec.stderr_fd = fd;
  pid_t tool = -1;
  try {
    tool = spawn_worker(spec);
  } catch (const LaunchError& e) {  // reported in the file instead: the verdict must go on
    return e.what();
  }
  const auto deadline = std::chrono::steady_clock::now() + kCaptureTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto status = os::try_reap(tool))
      return status->success() ? "" : fmt::format("{} ended with {}", spec.argv[0], status->describe());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  os::signal_process(tool, SIGKILL);
  os::wait_for(tool);
  return fmt::format("{} did not finish within {} s: killed", spec.argv[0], kCaptureTimeout.count());
}

}  // namespace

void capture_native_stacks(long pid, int rank, const std::string& path, const std::string& path_env) {
  const os::UniqueFd file = os::open_append(path);
  if (!file.valid()) return;  // best effort: the report says the capture is missing
  const int fd = file.get();
  auto note = [fd](const std::string& text) { console::write_all(fd, text); };
  note(fmt::format("== native stacks of rank {} (pid {}) ==\n", rank, pid));
  auto spec = stack_tool(pid, path_env);
  std::string problem = spec ? run_tool(std::move(*spec), fd)
                             : "neither eu-stack (elfutils) nor gdb is installed: run scripts/install-deps.sh";
  if (!problem.empty())
    note(
        fmt::format("(no complete native stacks: {}; if ptrace was refused, see docs/hangs.md \"ptrace "
                    "permission\": kernel.yama.ptrace_scope)\n",
                    problem));
  note("\n");
}

bool capture_stacks(const std::vector<StackTarget>& targets, const std::string& path_env) {
  std::string files;
  for (const StackTarget& t : targets) {
    if (t.stacks_file.empty()) continue;
    capture_native_stacks(t.pid, t.rank, t.stacks_file, path_env);
    files += (files.empty() ? "" : ", ") + t.stacks_file;
  }
  if (!files.empty()) console::launcher_notice("stacks in " + files);
  bool python = false;
  for (const StackTarget& t : targets)
    if (t.python) {
      // faulthandler appends the Python tracebacks. To the main thread itself (tgkill): sent to
      // the process, another thread (gloo's, say) may take it after the SIGCONT while the main
      // thread runs on, and a stopped rank's traceback would show the line after its stop.
      os::signal_main_thread(static_cast<pid_t>(t.pid), SIGABRT);
      os::signal_process(static_cast<pid_t>(t.pid), SIGCONT);
      python = true;
    }
  return python;
}

}  // namespace ddp::launch::supervise
