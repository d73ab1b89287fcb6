

#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/fd_io.hpp"
#include "launcher/os/process.hpp"
#include "launcher/os/run_to_end.hpp"
#include "launcher/supervise/stack_capture.hpp"
#include <fmt/format.h>
#include <optional>
#include <signal.h>
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

// Why a tool's run gave no complete stacks ("" when it did).
std::string problem_of(const os::SpawnSpec& spec, const os::RunEnd& end) {
  if (!end.error.empty()) return end.error;
  if (end.timed_out) return fmt::format("{} did not finish within {} s: killed", spec.argv[0], kCaptureTimeout.count());
  if (end.status && !end.status->success())
    return fmt::format("{} ended with {}", spec.argv[0], end.status->describe());
  return "";
}

void note(int fd, const std::string& problem) {
  if (!problem.empty())
    console::write_all(fd, fmt::format("(no complete native stacks: {}; if ptrace was refused, see docs/hangs.md "
                                       "\"ptrace permission\": kernel.yama.ptrace_scope)\n",
                                       problem));
  console::write_all(fd, "\n");
}

}  // namespace

bool capture_stacks(os::ChildRegistry& children, const std::vector<StackTarget>& targets, const std::string& path_env) {
  // Every file's header, then every tool at once (one time limit for all), then what failed.
  std::vector<os::UniqueFd> files;
  std::vector<os::SpawnSpec> specs;
  std::vector<int> spec_files;
  std::string names;
  for (const StackTarget& t : targets) {
    if (t.stacks_file.empty()) continue;
    names += (names.empty() ? "" : ", ") + t.stacks_file;
    os::UniqueFd file = os::open_append(t.stacks_file);
    if (!file.valid()) continue;  // best effort: the report says the capture is missing
    console::write_all(file.get(), fmt::format("== native stacks of rank {} (pid {}) ==\n", t.rank, t.pid));
    if (std::optional<os::SpawnSpec> spec = stack_tool(t.pid, path_env)) {
      spec->stdout_fd = spec->stderr_fd = file.get();
      specs.push_back(std::move(*spec));
      spec_files.push_back(file.get());
    } else {
      note(file.get(), "neither eu-stack (elfutils) nor gdb is installed: run scripts/install-deps.sh");
    }
    files.push_back(std::move(file));
  }
  const std::vector<os::RunEnd> ends = os::run_to_end(children, specs, kCaptureTimeout);
  for (size_t i = 0; i < specs.size(); ++i) note(spec_files[i], problem_of(specs[i], ends[i]));
  if (!names.empty()) console::launcher_notice("stacks in " + names);
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
