// ddp::spawn: fork nprocs workers with the launcher's env contract, supervise them, tear the
// group down on the first failure. The runtime's only POSIX process code.
#include "ddp/spawn.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "ddp/env.hpp"
#include "ddp/run.hpp"
#include "runtime/src/process/progress_feed.hpp"

namespace ddp {
namespace {

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string read_error_message(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  try {
    auto j = nlohmann::json::parse(in);
    return j.at("message").at("message").get<std::string>();
  } catch (const std::exception&) {
    return "";
  }
}

[[noreturn]] void run_child(int rank, int nprocs, int port, const std::string& error_file, const SpawnOptions& options,
                            const std::function<void(int)>& fn) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  WorkerEnv env;
  env.rank = env.local_rank = env.role_rank = rank;
  env.world_size = env.local_world_size = env.role_world_size = nprocs;
  env.master_addr = options.master_addr;
  env.master_port = port;
  env.error_file = error_file;
  env.run_id = "spawn";
  for (const auto& [name, value] : env.to_map()) ::setenv(name.c_str(), value.c_str(), 1);
  ::unsetenv(progress::kEnvVar);  // the launcher's record belongs to the parent
  detail::feed::disable_in_child();
  int code = run(0, nullptr, [&](int, char**) { fn(rank); });
  std::fflush(nullptr);
  ::_exit(code);
}

void kill_all(std::vector<pid_t>& pids, std::chrono::milliseconds grace) {
  for (pid_t pid : pids) {
    if (pid > 0) ::kill(pid, SIGTERM);
  }
  const auto deadline = std::chrono::steady_clock::now() + grace;
  for (pid_t& pid : pids) {
    while (pid > 0) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
      } else if (std::chrono::steady_clock::now() >= deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        pid = -1;
      } else {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
}

}  // namespace

int find_free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error("find_free_port: socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw Error("find_free_port: cannot bind a TCP socket on 127.0.0.1");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

namespace {

// How the workers' wait ended: the first rank that failed (its exit code), or the timeout.
struct WorkersEnd {
  int failed_rank = -1;
  int failed_code = 0;
  bool timed_out = false;
};

// Reaps the workers (a reaped one's pid becomes -1) until all exited, one failed, or
// options.timeout passed.
WorkersEnd wait_for_workers(std::vector<pid_t>& pids, const SpawnOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  size_t running = pids.size();
  WorkersEnd end;
  while (running > 0 && end.failed_rank < 0) {
    bool reaped = false;
    for (size_t rank = 0; rank < pids.size(); ++rank) {
      pid_t& pid = pids[rank];
      int status = 0;
      if (pid > 0 && ::waitpid(pid, &status, WNOHANG) == pid) {
        pid = -1;
        --running;
        reaped = true;
        if (exit_code_of(status) != 0 && end.failed_rank < 0) {
          end.failed_rank = static_cast<int>(rank);
          end.failed_code = exit_code_of(status);
        }
      }
    }
    if (options.timeout.count() > 0 && std::chrono::steady_clock::now() - start > options.timeout) {
      end.timed_out = true;
      break;
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return end;
}

}  // namespace

void spawn(int nprocs, const std::function<void(int)>& fn, const SpawnOptions& options) {
  if (nprocs < 1) throw ConfigError("spawn: nprocs must be >= 1, got " + std::to_string(nprocs));
  const int port = options.master_port > 0 ? options.master_port : find_free_port();
  char dir_template[] = "/tmp/ddp-spawn-XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  if (!dir) throw Error("spawn: cannot create a temporary directory under /tmp");
  auto error_file = [&](int rank) { return std::string(dir) + "/error_" + std::to_string(rank) + ".json"; };
  std::fflush(nullptr);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < nprocs; ++rank) {
    pid_t pid = ::fork();
    if (pid == 0) run_child(rank, nprocs, port, error_file(rank), options, fn);
    if (pid < 0) {
      kill_all(pids, options.grace);
      throw Error("spawn: fork() failed for rank " + std::to_string(rank));
    }
    pids.push_back(pid);
  }
  const WorkersEnd end = wait_for_workers(pids, options);
  std::string still_running;  // the ranks a timeout waited for
  for (int rank = 0; rank < nprocs; ++rank)
    if (pids[static_cast<size_t>(rank)] > 0)
      still_running += (still_running.empty() ? "" : ", ") + std::to_string(rank);
  kill_all(pids, options.grace);
  std::string message = end.failed_rank >= 0 ? read_error_message(error_file(end.failed_rank)) : "";
  for (int rank = 0; rank < nprocs; ++rank) ::unlink(error_file(rank).c_str());
  ::rmdir(dir);
  if (end.timed_out) {
    throw TimeoutError("spawn: workers did not finish within " + std::to_string(options.timeout.count()) +
                       " ms (still running: rank " + still_running + "); all were killed");
  }
  if (end.failed_rank >= 0) {
    std::string what = "spawned worker rank " + std::to_string(end.failed_rank) + " failed with exit code " +
                       std::to_string(end.failed_code) +
                       (end.failed_code > 128 ? " (signal " + std::to_string(end.failed_code - 128) + ")" : "");
    if (!message.empty()) what += ": " + message;
    throw ProcessFailedError(what + "; the other workers were stopped", end.failed_rank, end.failed_code);
  }
}

}  // namespace ddp
