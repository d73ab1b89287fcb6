// The machine's processes as /proc shows them: one entry per process (pid, parent, group,
// session, state, start time, command name), a process's environment variable and command
// line, and the pure walks over a table: who descends from whom. Reading /proc does not block
// (a process that ends mid-read is left out); the walks are pure; nothing here keeps state.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ddp::launch::os {

struct ProcessEntry {
  pid_t pid = 0;
  pid_t ppid = 0;
  pid_t pgid = 0;
  pid_t sid = 0;
  char state = '?';          // R, S, D, Z, T, ...: /proc/PID/stat's third field
  uint64_t start_ticks = 0;  // since boot, in clock ticks: with pid, names one process for good
  std::string comm;          // the command name (15 characters at most)
  bool zombie() const { return state == 'Z' || state == 'X'; }
};

// Parses one /proc/PID/stat line; nullopt if it is not one. Pure.
std::optional<ProcessEntry> parse_proc_stat(const std::string& line);

// Every process now (/proc/*/stat), ascending by pid.
std::vector<ProcessEntry> read_process_table();
// One process now; nullopt once it is gone.
std::optional<ProcessEntry> read_process(pid_t pid);

// The processes below root (root itself excluded), found by walking parent links; a process in
// `pruned` is left out with everything below it. Pure.
std::vector<ProcessEntry> descendants(const std::vector<ProcessEntry>& table, pid_t root,
                                      const std::set<pid_t>& pruned = {});

// NAME's value in the environment PID was started with (/proc/PID/environ): nullopt if it is
// not there or cannot be read (gone, another user's).
std::optional<std::string> environ_value(pid_t pid, const std::string& name);
// Its command line, arguments joined by spaces, at most max_chars; "" if gone or a kernel thread.
std::string command_line(pid_t pid, size_t max_chars = 80);

}  // namespace ddp::launch::os
