// What every agent (single- or multi-node) does around one attempt: turn the job and a
// GroupPlan into WorkerLaunch specs (env, argv, output routing, log and error files).
// prepare_attempt creates the attempt's log directories and removes stale error files;
// keep_reported_error_file keeps a temporary run directory whose error file a report names.
#pragma once

#include <vector>

#include "launcher/cli/environment.hpp"
#include "launcher/node/job_config.hpp"
#include "launcher/snapshot/snapshot_regions.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "launcher/worker/run_layout.hpp"
#include "launcher/worker/worker_env.hpp"

namespace ddp::launch::node {

// `snapshots` (the job's regions; nullptr: none, as in a dry run) puts each rank's region
// path in its environment (DDP_LAUNCH_SNAPSHOT_FILE, docs/snapshots.md).
std::vector<worker::WorkerLaunch> prepare_attempt(const JobConfig& job, const cli::Environment& env,
                                                  const worker::GroupPlan& plan, const worker::RunLayout& layout,
                                                  snapshot::SnapshotRegions* snapshots = nullptr);

// The failure report names `root`'s error file (or, for a hang, the stacks files): a
// temporary run directory holding it is kept (and said so), so that the path the user is
// told to read exists after exit.
void keep_reported_error_file(worker::RunLayout& layout, const report::WorkerOutcome& root);

// The one notice about OMP_NUM_THREADS, when the launcher sets it.
void notice_omp_threads(const cli::Environment& env, int nproc);

}  // namespace ddp::launch::node
