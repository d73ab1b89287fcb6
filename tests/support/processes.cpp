#include "tests/support/processes.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "tests/support/files.hpp"

extern char** environ;

namespace ddp::test {

std::vector<std::string> environment_with(const EnvOverrides& overrides) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : overrides) {
    if (v == kUnset) vars.erase(k);
    else vars[k] = v;
  }
  std::vector<std::string> entries;
  for (const auto& [k, v] : vars) entries.push_back(k + "=" + v);
  return entries;
}

namespace {
int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}
}  // namespace

int wait_exit_code(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return exit_code_of(status);
    if (std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::kill(-pid, SIGKILL);  // its group, when it leads one
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  return -1;
}

bool process_alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close_paren = stat.rfind(')');
  return close_paren == std::string::npos || stat.size() < close_paren + 3 || stat[close_paren + 2] != 'Z';
}

std::vector<pid_t> processes_with_env(const std::string& entry) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string env = read_file("/proc/" + name + "/environ");
    bool holds = false;
    for (size_t at = 0; at < env.size() && !holds;) {
      const size_t end = std::min(env.find('\0', at), env.size());
      holds = env.compare(at, end - at, entry) == 0;
      at = end + 1;
    }
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    if (holds && process_alive(pid)) out.push_back(pid);
  }
  return out;
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return pred();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

}  // namespace ddp::test
