// One worker of an attempt as the supervisor starts it: how to spawn it, where its output
// goes, the files it feeds (progress record, error file) and where a hang's stacks go.
// Plain data; no I/O.
#pragma once

#include <memory>
#include <string>

#include "launcher/os/process.hpp"
#include "launcher/worker/output.hpp"

namespace ddp::launch::worker {

struct WorkerLaunch {
  int rank = 0;
  int local_rank = 0;
  os::SpawnSpec spawn;     // stdout_fd/stderr_fd are set by the supervisor (pipes)
  std::string error_file;  // TORCHELASTIC_ERROR_FILE given to the worker
  std::string prefix;      // console line prefix
  bool stdout_to_console = true;
  bool stderr_to_console = true;
  std::string stdout_log;  // "" = no file
  std::string stderr_log;
  // --duplicate-*-filters: the attempt's filtered_{stdout,stderr}.log, for a tee'd stream
  // of a rank on the console (null: its lines are not copied).
  std::shared_ptr<DuplicateLog> stdout_duplicate;
  std::shared_ptr<DuplicateLog> stderr_duplicate;
  std::string progress_file;  // the progress record it feeds ("": not monitored)
  std::string stacks_file;    // where a hang's post-mortem goes
  bool python = false;        // gets SIGABRT after the native capture (faulthandler)
};

}  // namespace ddp::launch::worker
