#include "tests/support/test_support.hpp"

#include <fcntl.h>
#include <signal.h>

#include "launcher/cli/environment.hpp"
#include "launcher/os/child_registry.hpp"
#include "launcher/os/process.hpp"

extern char** environ;

namespace ddp::test {
using launch::os::UniqueFd;

namespace {

launch::os::ChildRegistry& children() {  // the test process's
  static launch::os::ChildRegistry registry;
  return registry;
}

pid_t start(const std::vector<std::string>& argv, const EnvOverrides& env, int out_fd, int err_fd) {
  launch::os::SpawnSpec spec;
  auto path = launch::cli::lookup(launch::cli::environment_from(environ), "PATH").value_or("/usr/bin:/bin");
  spec.executable = launch::os::resolve_program(argv.at(0), path);
  spec.argv = argv;
  spec.env = environment_with(env);
  spec.stdout_fd = out_fd;
  spec.stderr_fd = err_fd;
  return children().spawn(spec);
}

UniqueFd open_out(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
}

}  // namespace

std::string launcher_path() { return DDP_LAUNCH_BIN; }

RunResult run(const std::vector<std::string>& argv, const EnvOverrides& env, std::chrono::seconds timeout) {
  TempDir dir;
  RunResult r;
  auto t0 = std::chrono::steady_clock::now();
  {
    UniqueFd out = open_out(dir / "out");
    UniqueFd err = open_out(dir / "err");
    pid_t pid = start(argv, env, out.get(), err.get());
    r.exit_code = wait_exit_code(pid, timeout);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.out = read_file(dir / "out");
  r.err = read_file(dir / "err");
  return r;
}

RunResult launch(const std::vector<std::string>& args, const EnvOverrides& env, std::chrono::seconds timeout) {
  std::vector<std::string> argv{launcher_path()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, env, timeout);
}

Background::Background(const std::vector<std::string>& argv, const EnvOverrides& env) {
  UniqueFd out = open_out(dir_ / "out");
  UniqueFd err = open_out(dir_ / "err");
  pid_ = start(argv, env, out.get(), err.get());
}

Background::~Background() {
  if (!done_ && pid_ > 0) {
    launch::os::signal_group(pid_, SIGKILL);
    children().wait(pid_);
  }
}

void Background::signal(int signo) const { ::kill(pid_, signo); }

std::string Background::err_so_far() const { return read_file(dir_ / "err"); }

RunResult Background::wait(std::chrono::seconds timeout) {
  RunResult r;
  r.exit_code = wait_exit_code(pid_, timeout);
  done_ = true;
  r.out = read_file(dir_ / "out");
  r.err = read_file(dir_ / "err");
  return r;
}

}  // namespace ddp::test
