// --preflight on one node, before any worker starts (and `ddp-launch preflight`): measure
// (preflight/measure.hpp; a GPU job's NCCL all-reduce in a child process, nccl_check.hpp), judge
// (preflight/verdict.hpp), say each finding that is not a pass on the console and every finding
// in the event log (one `preflight` event each), and stop the node with
// LaunchError(kPreflightFailed) naming the failing checks, their figures and thresholds. Blocks for the CPU measurement
// (cpu_ms, 0.2 s by default) and the NCCL probe.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launcher/cli/environment.hpp"
#include "launcher/cli/preflight_conf.hpp"
#include "launcher/os/child_registry.hpp"
#include "launcher/preflight/verdict.hpp"
#include "launcher/report/event_log.hpp"
#include "launcher/report/status_board.hpp"
#include "launcher/worker/devices.hpp"

namespace ddp::launch::preflight {

// The folders a job writes, as the checks name them: the snapshot regions' (DDP_LAUNCH_SNAPSHOT_DIR
// or /dev/shm), the run directory's, and --snapshot-persist-dir's when given.
std::vector<std::pair<std::string, std::string>> preflight_folders(const cli::Environment& env,
                                                                   const std::string& run_dir,
                                                                   const std::string& persist_dir);

struct NodeCheck {
  std::vector<preflight::Finding> findings;
  std::string failed;            // preflight::failed_summary: "" when nothing failed
  double cpu_median_gflops = 0;  // what the leader of a multi-node round compares
  double nccl_busbw_gbps = 0;    // and this (0: not measured, one GPU, or the all-reduce failed)
};

// Where a node's findings go besides the caller: one event each, each check's worst level on
// the status board (/status.json, /metrics), and a console line for each that is not a pass.
struct PreflightOutputs {
  report::EventLog* events = nullptr;
  report::StatusBoard* board = nullptr;
  bool say = false;
};

// What a node checks: its workers (each a snapshot region), the GPUs they use (0: none, no GPU
// check) and which (the CUDA_VISIBLE_DEVICES of the NCCL probe; "": the launcher's, whose first
// `gpus` the workers use), the folders the job writes.
struct NodeNeeds {
  int workers = 1;
  int gpus = 0;
  std::vector<std::pair<std::string, std::string>> folders;
  std::string gpu_list;
  std::string nccl_library;  // the NCCL the job uses, when known (nccl_check.hpp wheel_nccl)
};

// A job's needs on this node from its device plan (--devices, --virtual-local-rank: the GPUs
// its workers were given) and its workers' executable (a Python interpreter: its environment's
// torch wheel NCCL is the job's).
NodeNeeds job_needs(const worker::DevicePlan& devices, int workers,
                    std::vector<std::pair<std::string, std::string>> folders, const std::string& executable);

// Measures and judges (the NCCL probe starts through children); the findings go to `out` as well.
NodeCheck check_node(os::ChildRegistry& children, const cli::PreflightConf& conf, const NodeNeeds& needs,
                     const PreflightOutputs& out);

// A single node's --preflight: check_node, then the verdict: throws
// LaunchError(kPreflightFailed) when a check failed. (Several nodes: the failure goes to the
// round's leader, rendezvous.hpp, which leaves the node out or stops the job.)
void run_preflight(os::ChildRegistry& children, const cli::PreflightConf& conf, const NodeNeeds& needs,
                   const PreflightOutputs& out);

}  // namespace ddp::launch::preflight
