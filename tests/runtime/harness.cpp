// Process harness (no torch): posix_spawn of the test binary as workers, deadlines, output.
#include "harness.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace ddp::test {
namespace {

pid_t spawn_self(const std::vector<std::string>& args, const Env& env, const std::string& output_path) {
  std::vector<std::string> env_strings = environment_with(env);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  const std::string self = self_exe();
  std::vector<std::string> argv_strings{self};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn failed: " + std::string(std::strerror(rc)));
  return pid;
}

std::chrono::milliseconds left_until(std::chrono::steady_clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(0));
}

}  // namespace

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
  const TempDir tmp;
  const std::string& dir = tmp.path();
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
  // One deadline for all: whoever still runs when it passes is killed (exit code -1).
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (size_t i = 0; i < pids.size(); ++i) result.ranks[i].exit_code = wait_exit_code(pids[i], left_until(deadline));
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

}  // namespace ddp::test
