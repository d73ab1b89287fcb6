// Warm restarts' pure decisions (docs/warm-restarts.md): which kind of standby a job's
// program can have (a Python interpreter with torch imported, or a program linked with
// libddp, which carries the standby hook's marker) or why none (the one notice), a
// standby's command line, whether a standby can become a given worker, and when to stop
// replacing standbys that die before they are ready. No I/O; the pool (standby_pool.hpp)
// acts on them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/os/process.hpp"

namespace ddp::launch::warm {

enum class StandbyKind { kNone, kPython, kNative };

struct StandbyPlan {
  StandbyKind kind = StandbyKind::kNone;
  std::string cold_reason;           // kind kNone although warm restarts were asked for: why (one notice)
  std::vector<std::string> preload;  // --preload: modules a Python standby imports besides torch
};

struct StandbyRequest {
  bool warm_restarts = false;     // --warm-restarts (default: on when max_restarts > 0)
  int max_restarts = 0;           // no restart, no standby
  std::string program;            // PROGRAM as given, for the notice
  std::string executable;         // what the workers exec
  std::vector<std::string> argv;  // local rank 0's argv (argv[0] included)
  bool has_hook_marker = false;   // the executable carries libddp's standby hook
  std::vector<std::string> preload;
};

StandbyPlan plan_standbys(const StandbyRequest& request);

// An executable named python* (python3, python3.11, ...): a worker started through Python.
bool is_python_executable(const std::string& executable);

// `python [FLAGS] script|-m module [ARGS]`: the interpreter flags (FLAGS), or nullopt where
// there is no script to hand over (python -c, an interactive interpreter).
std::optional<std::vector<std::string>> python_flags(const std::vector<std::string>& argv);

// The standby's command line for a worker slot's argv: the same interpreter and flags
// running the bootstrap (`python FLAGS -c BOOTSTRAP`); a native program's argv unchanged.
std::vector<std::string> standby_argv(const StandbyPlan& plan, const std::vector<std::string>& slot_argv,
                                      const std::string& bootstrap);

// Whether a standby started for (executable, slot_argv) can become the worker `spawn`:
// a Python one needs the same interpreter and flags (it is handed any script and
// arguments); a native one, or a Python one prepared (running slot_argv's script up to its
// standby point), the very same argv (the program has seen the argv it was started with).
bool adoptable(const StandbyPlan& plan, const std::string& executable, const std::vector<std::string>& slot_argv,
               const os::SpawnSpec& spawn, bool prepared = false);

// Standbys that die before they are ready (`import torch` fails, the program exits at
// once): after kMaxEarlyDeaths in a row the pool stops replacing them, and says so once.
class StandbyRetries {
 public:
  static constexpr int kMaxEarlyDeaths = 3;
  void ready() { early_deaths_ = 0; }
  // A standby exited; true when the pool must give up now (the first time only).
  bool exited(bool was_ready);
  bool given_up() const { return given_up_; }
  void give_up() { given_up_ = true; }  // e.g. a standby cannot even be started

 private:
  int early_deaths_ = 0;
  bool given_up_ = false;
};

}  // namespace ddp::launch::warm
