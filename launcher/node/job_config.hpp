// What every agent (single- or multi-node) runs, resolved once from the command line by
// resolve_job (launcher/app/resolve_job.hpp): the planned devices, the worker command, where
// files and output go, how to supervise, and the job's constants for the worker group.
// group_plan() is the one GroupPlan builder: an agent only says where its node sits.
// Plain data; no I/O.
#pragma once

#include <optional>
#include <set>
#include <string>

#include "launcher/cli/option_parsers.hpp"  // StreamSelection
#include "launcher/cli/preflight_conf.hpp"
#include "launcher/cli/worker_health_env.hpp"
#include "launcher/snapshot/persist_plan.hpp"
#include "launcher/report/status_board.hpp"  // StatusSpec
#include "launcher/supervise/supervisor.hpp"
#include "launcher/warm/standby_plan.hpp"
#include "launcher/worker/devices.hpp"
#include "launcher/worker/run_layout.hpp"
#include "launcher/worker/worker_command.hpp"
#include "launcher/worker/worker_env.hpp"

namespace ddp::launch::node {

// Where each worker's output goes: -r/--redirects, -t/--tee, --local-ranks-filter and
// --log-line-prefix-template (expanded per worker with the group's role).
struct OutputSpec {
  cli::StreamSelection redirects;
  cli::StreamSelection tee;
  std::optional<std::set<int>> local_ranks_filter;  // absent: every rank on the console
  std::string prefix_template = "[rank${rank}]: ";
  std::optional<int> stdin_rank;  // the global rank whose stdin is the launcher's
  // --duplicate-stdout/stderr-filters: tee'd lines containing one go to the attempt's
  // filtered_{stdout,stderr}.log too (absent: no such file).
  std::optional<std::vector<std::string>> duplicate_stdout_filters;
  std::optional<std::vector<std::string>> duplicate_stderr_filters;
};

struct JobConfig {
  std::string program;  // PROGRAM as given, for reports
  std::string run_id;   // --rdzv-id, or a random one with --standalone
  std::string role = "default";
  int max_restarts = 0;
  worker::DevicePlan devices;     // how many workers, and their CUDA_VISIBLE_DEVICES
  worker::WorkerCommand command;  // checked: the program exists and can run
  worker::RunLayoutSpec layout;
  OutputSpec output;
  supervise::SupervisorConfig supervisor;
  bool warm_restarts = false;  // --warm-restarts (asked for; `standby` says what the program allows)
  warm::StandbyPlan standby;   // warm restarts: which standbys (standby_plan.hpp)
  // --worker-store=launcher: the node of group rank 0 hosts the workers' c10d store.
  bool launcher_worker_store = true;
  cli::ContainmentRequest containment = cli::ContainmentRequest::kAuto;  // --containment
  bool restrict_worker_store_peers = false;          // a rendezvous token is set: only the nodes may connect
  snapshot::SnapshotPersistConfig snapshot_persist;  // --snapshot-persist-dir/-interval (dir "": off)
  std::optional<cli::PreflightConf> preflight;       // --preflight (absent: off) and its --preflight-conf
  report::StatusSpec status;                         // the status endpoint, the termination log
  std::string signals_to_handle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";  // TORCHELASTIC_SIGNALS_TO_HANDLE
  std::vector<std::vector<int>> worker_cpus;  // --numa-binding: per local rank (empty: no binding)
  bool events_to_console = false;             // --event-log-handler=console
  cli::WorkerHealthSpec health;               // file timers, D-state check, health check port (torchrun 2.15's)
};

// Where this node sits in one attempt: from the options (single node) or a round plan.
struct NodePlacement {
  int node_rank = 0;
  int nnodes = 1;
  int base_rank = 0;  // RANK of this node's local rank 0
  int world_size = 1;
  std::string master_addr;
  int master_port = 0;
  int restart_count = 0;
  bool agent_store = false;  // the launcher of group rank 0 serves MASTER_ADDR:MASTER_PORT
  int role_base_rank = -1;   // ROLE_RANK of local rank 0; -1: base_rank (one role)
  int role_world_size = -1;  // -1: world_size
};

worker::GroupPlan group_plan(const JobConfig& job, const NodePlacement& where);

}  // namespace ddp::launch::node
