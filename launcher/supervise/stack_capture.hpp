// Post-mortem of hung workers, taken before anything is killed: the native stacks of every
// thread (eu-stack from elfutils, else gdb) written to each one's stacks.txt, then the
// Python ones' tracebacks (faulthandler, on SIGABRT). Needs ptrace rights over the workers
// (docs/hangs.md: Yama's ptrace_scope). The tools run at once (os/run_to_end): blocks up to
// kCaptureTimeout in all; never throws (a failed capture is written into the file instead).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "launcher/os/child_registry.hpp"

namespace ddp::launch::supervise {

inline constexpr std::chrono::seconds kCaptureTimeout{20};

// A live worker whose stacks a hang's post-mortem takes.
struct StackTarget {
  long pid = 0;
  int rank = 0;
  std::string stacks_file;  // "": no run directory, no native capture
  bool python = false;      // gets SIGABRT + SIGCONT afterwards (its faulthandler)
};
// Appends "== native stacks of rank R (pid P) ==" and the tool's output (or why there is none)
// to every target's file, the tools running at once (the files are named in a notice); then
// SIGABRT and
// SIGCONT to the Python ones: their faulthandler appends the tracebacks, and a stopped one
// is continued for it; the caller gives them time before it stops them. Returns whether a
// Python worker was signalled.
// path_env: the launcher's PATH, to find the tools.
bool capture_stacks(os::ChildRegistry& children, const std::vector<StackTarget>& targets, const std::string& path_env);

}  // namespace ddp::launch::supervise
