// What every agent (single- or multi-node) does around one attempt: work out devices and
// the worker command once, turn a GroupPlan into WorkerLaunch specs (env, argv, output
// routing, log and error files), print --dry-run, and configure the Supervisor.
#pragma once

#include <string>
#include <vector>

#include "launcher/worker/devices.hpp"
#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"
#include "launcher/worker/run_layout.hpp"
#include "launcher/supervise/supervisor.hpp"
#include "launcher/worker/worker_command.hpp"
#include "launcher/worker/worker_env.hpp"

namespace ddp::launch {

struct JobSetup {
  DevicePlan devices;
  WorkerCommand command;
};

// Throws LaunchError for impossible device requests or a program that cannot run.
JobSetup setup_job(const LaunchOptions& options, const Environment& env);

std::vector<WorkerLaunch> prepare_attempt(const LaunchOptions& options, const Environment& env,
                                          const GroupPlan& plan, const JobSetup& job,
                                          const RunLayout& layout);

// Prints each worker's command and contract variables; returns the exit code (0).
int print_dry_run(const std::vector<WorkerLaunch>& launches, const GroupPlan& plan, const Environment& base);

SupervisorConfig supervisor_config(const LaunchOptions& options);

// The one notice about OMP_NUM_THREADS, when the launcher sets it.
void notice_omp_threads(const Environment& env, int nproc);

// A random hex id (for --standalone run ids).
std::string random_id();

}  // namespace ddp::launch
