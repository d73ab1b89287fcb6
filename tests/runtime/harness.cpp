// Process harness (no torch): posix_spawn of the test binary as workers, deadlines, output.
#include "harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace ddp::test {
namespace {

std::string self_path = "/proc/self/exe";

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

pid_t spawn_self(const std::vector<std::string>& args, const Env& env, const std::string& output_path) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : env) {
    if (v == "\x01") {
      vars.erase(k);
    } else {
      vars[k] = v;
    }
  }
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : vars) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings{self_path};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, self_path.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn failed: " + std::string(std::strerror(rc)));
  return pid;
}

}  // namespace

void set_self_path(const std::string& path) {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  self_path = n > 0 ? std::string(buf, static_cast<size_t>(n)) : path;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

std::vector<std::string>& temp_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}

void remove_temp_dirs() {
  std::error_code ec;
  for (const auto& d : temp_dirs()) std::filesystem::remove_all(d, ec);
}

std::string make_temp_dir() {
  char tmpl[] = "/tmp/ddp-rt-test-XXXXXX";
  const char* dir = ::mkdtemp(tmpl);
  if (!dir) throw std::runtime_error("mkdtemp failed");
  if (temp_dirs().empty() && !std::getenv("DDP_TEST_KEEP")) std::atexit(remove_temp_dirs);
  temp_dirs().push_back(dir);
  return dir;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Workers::all_ok() const {
  for (const auto& r : ranks) {
    if (r.exit_code != 0) return false;
  }
  return !ranks.empty();
}

std::string Workers::describe() const {
  std::string s;
  for (size_t r = 0; r < ranks.size(); ++r) {
    s += "--- rank " + std::to_string(r) + " exit " + std::to_string(ranks[r].exit_code) + "\n" + ranks[r].output;
  }
  return s;
}

namespace {
Workers run_once(const std::string& scenario, int world, const std::vector<int>& ranks, const Env& env,
                 std::chrono::seconds timeout) {
  const std::string dir = make_temp_dir();
  const int port = free_port();
  std::vector<pid_t> pids;
  Workers result;
  result.ranks.resize(ranks.size());
  for (int r : ranks) {
    Env e = env;
    e["RANK"] = e["LOCAL_RANK"] = std::to_string(r);
    e["WORLD_SIZE"] = e["LOCAL_WORLD_SIZE"] = std::to_string(world);
    e["MASTER_ADDR"] = "127.0.0.1";
    e["MASTER_PORT"] = std::to_string(port);
    if (!e.count("TORCHELASTIC_RESTART_COUNT")) e["TORCHELASTIC_RESTART_COUNT"] = "0";
    e["TORCHELASTIC_ERROR_FILE"] = dir + "/error_" + std::to_string(r) + ".json";
    e["OMP_NUM_THREADS"] = "1";
    if (!e.count("DDP_TEST_OUT")) e["DDP_TEST_OUT"] = dir;
    pids.push_back(spawn_self({"--worker", scenario}, e, dir + "/out_" + std::to_string(r) + ".txt"));
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  size_t running = pids.size();
  while (running > 0) {
    bool progressed = false;
    for (size_t i = 0; i < pids.size(); ++i) {
      int status = 0;
      if (pids[i] > 0 && ::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        result.ranks[i].exit_code = exit_code_of(status);
        pids[i] = -1;
        --running;
        progressed = true;
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      for (auto& pid : pids) {
        if (pid > 0) {
          ::kill(pid, SIGKILL);
          ::waitpid(pid, nullptr, 0);
          pid = -1;
        }
      }
      break;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    result.ranks[i].output = read_file(dir + "/out_" + std::to_string(ranks[i]) + ".txt");
    result.ranks[i].error_file = read_file(dir + "/error_" + std::to_string(ranks[i]) + ".json");
  }
  return result;
}
}  // namespace

Workers run_some_workers(const std::string& scenario, int world, const std::vector<int>& ranks, const Env& env,
                         std::chrono::seconds timeout) {
  // The free port may be taken by another job between free_port() and rank 0's bind (tests
  // run next to other builds); retry with a new port in that case only.
  for (int attempt = 0;; ++attempt) {
    Workers w = run_once(scenario, world, ranks, env, timeout);
    bool port_taken = false;
    for (const auto& r : w.ranks) port_taken |= r.output.find("could not host the store") != std::string::npos;
    if (!port_taken || attempt == 2) return w;
  }
}

Workers run_workers(const std::string& scenario, int world, const Env& env, std::chrono::seconds timeout) {
  std::vector<int> ranks;
  for (int r = 0; r < world; ++r) ranks.push_back(r);
  return run_some_workers(scenario, world, ranks, env, timeout);
}

int start_process(const std::string& scenario, const Env& env, const std::string& output_path) {
  Env e = env;
  e["OMP_NUM_THREADS"] = "1";
  return spawn_self({"--worker", scenario}, e, output_path);
}

void kill_process(int pid, int signo) { ::kill(pid, signo); }

int wait_process(int pid, std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) return exit_code_of(status);
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace ddp::test
