// JobEnd: how a job ends on this node, written once for every agent. Each end writes the
// `finish` event; a failure that ends the job also writes the report on stderr, keeps the run
// directory whose files the report names, copies the root cause to the launcher's own
// TORCHELASTIC_ERROR_FILE (a scheduler reads it) and writes the termination log. Every end
// persists the newest snapshot (docs/snapshots.md) and concludes the goodput ledger: a
// `goodput` event before `finish`, and its line on the console when the job restarted or ran a
// minute or more (docs/goodput.md). Owned by NodeSession; single-threaded.
#pragma once

#include <optional>
#include <string>

#include "launcher/cli/environment.hpp"
#include "launcher/node/job_config.hpp"
#include "launcher/report/attempt_result.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/report/failure_report.hpp"
#include "launcher/report/goodput_ledger.hpp"
#include "launcher/snapshot/snapshot_regions.hpp"
#include "launcher/worker/run_layout.hpp"

namespace ddp::launch::node {

class JobEnd {
 public:
  JobEnd(const JobConfig& job, const cli::Environment& env, worker::RunLayout& layout, report::EventLog& events,
         snapshot::SnapshotRegions& snapshots, report::GoodputLedger& goodput)
      : job_(job), env_(env), layout_(layout), events_(events), snapshots_(snapshots), goodput_(goodput) {}

  // This node's worker (result's root cause) ends the job in its restart `restart_count`:
  // reported here. Returns the job's exit code for it. No finish event (failed() writes it).
  int report_own_failure(const report::AttemptResult& result, int restart_count);
  // Another node's root cause ends the job with `exit_code`: reported here as that node's.
  void report_others_failure(const report::RemoteFailure& root, int exit_code, int node_rank);
  // Another launcher's stop signal ends the job: its report here (no error file: a stop is
  // not a failure to record).
  void report_stop_elsewhere(const report::RemoteFailure& stop, int node_rank);

  // The finish event: outcome "succeeded" (code 0) or "failed"; the newest snapshot to disk
  // (skipped when the attempt's end just wrote that step).
  void finished(int code);
  // A stop ends the job between attempts (a signal here, another launcher's stop record): the
  // newest snapshot to disk.
  void stopped_between_attempts();
  // The finish event of a job stopped by `signal` (the launching machine's `note`, if any).
  // Returns the exit code (128 + signal).
  int interrupted(int signal, const std::optional<std::string>& note);
  // The launcher itself failed (`code`, `message`): the newest snapshot persisted, the finish
  // event. store_lost: the job's store was lost (a final failure event first).
  void failed_by_error(int code, const std::string& message, bool store_lost = false);

 private:
  void write_launcher_error_file(const std::string& record) const;
  void conclude_goodput();

  const JobConfig& job_;
  const cli::Environment& env_;
  worker::RunLayout& layout_;
  report::EventLog& events_;
  snapshot::SnapshotRegions& snapshots_;
  report::GoodputLedger& goodput_;
};

}  // namespace ddp::launch::node
