#include "tests/support/test_support.hpp"

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "launcher/cli/environment.hpp"
#include "launcher/os/process.hpp"

extern char** environ;

namespace ddp::test {
namespace fs = std::filesystem;
using launch::UniqueFd;

namespace {

std::vector<std::string> make_env(const EnvOverrides& overrides) {
  launch::Environment env = launch::environment_from(environ);
  for (const auto& [k, v] : overrides) {
    if (v == kUnset) env.erase(k);
    else env[k] = v;
  }
  return launch::environment_entries(env);
}

pid_t start(const std::vector<std::string>& argv, const EnvOverrides& env, int out_fd, int err_fd) {
  launch::SpawnSpec spec;
  auto path = launch::lookup(launch::environment_from(environ), "PATH").value_or("/usr/bin:/bin");
  spec.executable = launch::resolve_program(argv.at(0), path);
  spec.argv = argv;
  spec.env = make_env(env);
  spec.stdout_fd = out_fd;
  spec.stderr_fd = err_fd;
  return launch::spawn_worker(spec);
}

UniqueFd open_out(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
}

// Waits for pid up to timeout; kills its group on timeout. Returns exit code or -1.
int wait_with_timeout(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto status = launch::try_reap(pid)) return status->launcher_exit_code();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  launch::signal_group(pid, SIGKILL);
  ::kill(pid, SIGKILL);
  launch::wait_for(pid);
  return -1;
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
    r.exit_code = wait_with_timeout(pid, timeout);
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
  char tmpl[] = "/tmp/ddp-test-bg-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  out_path_ = dir + "/out";
  err_path_ = dir + "/err";
  UniqueFd out = open_out(out_path_);
  UniqueFd err = open_out(err_path_);
  pid_ = start(argv, env, out.get(), err.get());
}

Background::~Background() {
  if (!done_ && pid_ > 0) {
    launch::signal_group(pid_, SIGKILL);
    launch::wait_for(pid_);
  }
  std::error_code ec;
  fs::remove_all(fs::path(out_path_).parent_path(), ec);
}

void Background::signal(int signo) const { ::kill(pid_, signo); }

std::string Background::err_so_far() const { return read_file(err_path_); }

RunResult Background::wait(std::chrono::seconds timeout) {
  RunResult r;
  r.exit_code = wait_with_timeout(pid_, timeout);
  done_ = true;
  r.out = read_file(out_path_);
  r.err = read_file(err_path_);
  return r;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/ddp-test-XXXXXX";
  path_ = ::mkdtemp(tmpl);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

bool file_exists(const std::string& path) { return fs::exists(path); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool process_alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close_paren = stat.rfind(')');
  return close_paren == std::string::npos || stat.size() < close_paren + 3 || stat[close_paren + 2] != 'Z';
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

int count_matching(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

}  // namespace ddp::test
