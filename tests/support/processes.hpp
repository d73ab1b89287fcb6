// Child processes in tests, without the launcher: the test's environment with overrides,
// waiting for a child with a deadline (killed at the deadline), liveness, and polling a
// condition. No torch, no launcher code; blocking; call from one thread per child.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ddp::test {

using EnvOverrides = std::map<std::string, std::string>;  // value kUnset removes the variable
inline const std::string kUnset = "\x01";

// This process's environment with overrides applied, as sorted "KEY=VALUE" entries.
std::vector<std::string> environment_with(const EnvOverrides& overrides);

// Reaps pid: its exit code, 128+N when killed by signal N, or -1 when it was still running
// at the deadline (then its process group and it are SIGKILLed and reaped).
int wait_exit_code(pid_t pid, std::chrono::milliseconds timeout);

bool process_alive(pid_t pid);  // exists and is not a zombie
// Live processes (not zombies) whose environment (/proc/PID/environ) holds the entry
// "NAME=VALUE" exactly: every process of a job whose launcher was given that variable.
std::vector<pid_t> processes_with_env(const std::string& entry);
// Polls pred every 20 ms until true or timeout; returns pred's last value.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

}  // namespace ddp::test
