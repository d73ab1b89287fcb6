// Where a run's files go, in torchrun's layout: RUN/attempt_K/LOCAL_RANK/{stdout.log,
// stderr.log,error.json}, RUN = LOG_DIR/<run_id>_<random>. Without --log-dir a temporary
// RUN under $TMPDIR holds only the error files and is removed at exit (kept if output was
// redirected there, or kept by keep(): a failed job's report names an error file in it).
// --log-dir /dev/null disables every file, error files included.
#pragma once

#include <string>

#include "launcher/cli/environment.hpp"

namespace ddp::launch::worker {

// What decides the layout: --log-dir, the run id, and whether any output is redirected.
struct RunLayoutSpec {
  std::string log_dir;  // "": a temporary RUN; "/dev/null": no files at all
  std::string run_id;
  bool output_redirected = false;  // --redirects/--tee name a stream: keep the temporary RUN
};

class RunLayout {
 public:
  RunLayout() = default;  // disabled: no files at all
  RunLayout(const RunLayoutSpec& spec, const cli::Environment& env);
  ~RunLayout();  // removes a temporary run directory
  RunLayout(const RunLayout&) = delete;
  RunLayout& operator=(const RunLayout&) = delete;

  bool enabled() const { return !run_dir_.empty(); }
  const std::string& run_dir() const { return run_dir_; }
  bool keeps_all_logs() const { return keep_all_logs_; }  // --log-dir given
  bool temporary() const { return temporary_; }

  // A temporary run directory survives the launcher (a report named a file in it).
  void keep() { temporary_ = false; }

  // Creates attempt_K/LOCAL_RANK and returns its path ("" if disabled).
  std::string worker_dir(int restart_count, int local_rank) const;

 private:
  std::string run_dir_;
  bool keep_all_logs_ = false;
  bool temporary_ = false;
};

}  // namespace ddp::launch::worker
