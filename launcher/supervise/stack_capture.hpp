// Post-mortem of a hung worker, taken before anything is killed: the native stacks of every
// thread (eu-stack from elfutils, else gdb) written to its stacks.txt. Needs ptrace rights
// over the worker (README "Hangs": Yama's ptrace_scope). Blocks up to kCaptureTimeout per
// worker; never throws (a failed capture is written into the file instead).
#pragma once

#include <chrono>
#include <string>

namespace ddp::launch {

inline constexpr std::chrono::seconds kCaptureTimeout{20};

// Appends "== native stacks of rank R (pid P) ==" and the tool's output (or why there is
// none) to path. path_env: the launcher's PATH, to find the tools.
void capture_native_stacks(long pid, int rank, const std::string& path, const std::string& path_env);

}  // namespace ddp::launch
