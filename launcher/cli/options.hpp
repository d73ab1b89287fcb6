// Command-line options of ddp-launch: torchrun's flags in both spellings (--nproc-per-node
// and --nproc_per_node) and their unambiguous prefixes (flag_prefix.hpp), PET_<NAME>
// environment defaults (command line wins; empty ones unset), then placement defaults
// (mpirun/PMI, Slurm, JOB_COMPLETION_INDEX), then validation into LaunchOptions (flag
// values: option_parsers.hpp, --rdzv-conf: rendezvous_conf.hpp, the backend and endpoint:
// rendezvous_target.hpp). Pure: the environment is
// passed in; nothing is started. Errors throw LaunchError(exit_code::kUsage) with one line.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"
#include "launcher/cli/host_flags.hpp"
#include "launcher/cli/option_parsers.hpp"
#include "launcher/cli/preflight_conf.hpp"
#include "launcher/cli/strike_policy.hpp"
#include "launcher/cli/rendezvous_conf.hpp"
#include "launcher/cli/rendezvous_target.hpp"

namespace ddp::launch::cli {

inline constexpr const char* kLauncherVersion = DDP_LAUNCH_VERSION;  // VERSION, through CMake

// --containment: how the processes the workers start are kept inside the job.
enum class ContainmentRequest {
  kAuto,       // a cgroup where the machine allows one, else subreaper only
  kCgroup,     // a cgroup, or a usage error saying why there is none
  kSubreaper,  // subreaper and the environment token only
};

struct LaunchOptions {
  // What each worker runs.
  std::string program;                    // script, module or executable
  std::vector<std::string> program_args;  // everything after PROGRAM
  bool module = false;                    // -m: python -u -m PROGRAM
  bool no_python = false;                 // --no-python: run PROGRAM directly
  bool run_path = false;                  // --run-path: PROGRAM through python, any name
  std::string local_rank_flag;            // --use-env=false: "--local_rank" (or --local-rank-arg)
  // Neither --use-env, --local-rank-arg nor --legacy-local-rank-arg given: a Python script that
  // declares --local_rank gets it (worker/script_local_rank.hpp).
  bool local_rank_auto = true;
  // How many, where.
  NprocSpec nproc;
  int nnodes_min = 1;
  int nnodes_max = 1;
  int node_rank = 0;
  bool node_rank_given = false;  // explicit --node-rank (or Slurm): dynamic mode honours it
  RdzvBackend rdzv_backend = RdzvBackend::kStatic;
  std::string rdzv_endpoint;                 // --rdzv-endpoint as given ("": none), for messages
  std::vector<HttpEndpoint> rdzv_endpoints;  // its members, read once (rendezvous_target.hpp)
  std::string rdzv_id = "none";
  // A plain single-node job (static, no --rdzv-endpoint, no --master-port, no --rdzv-id) or
  // --standalone: a fresh uuid4 run id, as torchrun 2.x (which switches such a job to c10d).
  bool fresh_run_id = false;
  RendezvousConf rdzv;
  bool standalone = false;
  std::string master_addr = "127.0.0.1";
  bool master_addr_given = false;  // explicit --master-addr (or PET_MASTER_ADDR, or Slurm's first host)
  std::optional<int> master_port;  // absent: a free port on a single node
  std::string local_addr;
  std::string role = "default";
  // --worker-store: the launcher hosts the workers' c10d TCPStore at MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True); false (rank0): worker rank 0 hosts it.
  bool launcher_worker_store = true;
  ContainmentRequest containment = ContainmentRequest::kAuto;  // --containment
  // Supervision.
  int max_restarts = 0;
  double shutdown_timeout_s = 30.0;
  double hang_timeout_s = kHangTimeoutAuto;                              // --hang-timeout; 0: off; default auto
  double straggler_threshold = 2.0;                                      // --straggler-threshold; 0: off
  std::vector<int> signals_to_handle;                                    // signal numbers
  std::string signals_to_handle_text = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";  // as given: TORCHELASTIC_SIGNALS_TO_HANDLE
  bool warm_restarts = false;                                            // --warm-restarts; default: max_restarts > 0
  std::vector<std::string> preload;                                      // --preload: modules a Python standby imports
  // Snapshots to disk: local rank 0's in-memory snapshot written to this folder ("": off).
  std::string snapshot_persist_dir;
  double snapshot_persist_interval_s = 300;  // --snapshot-persist-interval; 0: failure, end, stop only
  // --preflight: each node checks itself before its workers start; --preflight-conf: thresholds.
  bool preflight = false;
  PreflightConf preflight_conf;
  StrikePolicy strikes;  // --strikes: a node whose workers keep failing is left out
  // GPUs.
  std::optional<std::vector<int>> devices;  // --devices 0,2,5 (indices into the visible list)
  bool virtual_local_rank = false;
  std::string numa_binding;  // --numa-binding: "" off, node or socket (worker/numa_binding.hpp)
  // Output.
  std::string log_dir;
  StreamSelection redirects;
  StreamSelection tee;
  std::optional<std::set<int>> local_ranks_filter;
  std::string log_line_prefix_template = "[rank${rank}]: ";
  // --duplicate-stdout/stderr-filters: tee'd lines containing any of these also go to
  // RUN/attempt_K/filtered_{stdout,stderr}.log; absent: no such file.
  std::optional<std::vector<std::string>> duplicate_stdout_filters;
  std::optional<std::vector<std::string>> duplicate_stderr_filters;
  bool events_to_console = false;  // --event-log-handler=console
  std::optional<int> stdin_rank;   // --stdin-rank N
  bool stdin_rank_auto = true;     // --stdin-rank auto (default): rank 0 if stdin is a terminal
  bool dry_run = false;
  // The status endpoint and the termination log (docs/metrics.md).
  std::optional<int> metrics_port;    // --metrics-port (0: a free one); absent: no endpoint
  std::string metrics_addr;           // --metrics-addr; "": the job's own address
  bool metrics_show_args = false;     // --metrics-show-args: the page shows the worker's arguments
  std::string termination_log;        // --termination-log; "": /dev/termination-log where writable
  std::vector<std::string> warnings;  // for the launcher to print before it starts (no I/O here)
  std::vector<std::string> notices;   // likewise, plain notices: where the placement came from, ...
  // A many-host launch over ssh (--hostfile / --hosts; launcher/many_hosts, docs/hosts.md).
  HostsOptions hosts;
  bool nproc_given = false;  // --nproc-per-node (or PET_NPROC_PER_NODE) given
};

// The outcome of reading the command line: either options to run, or text to print and
// an exit code (--help, --version).
struct ParsedCommandLine {
  std::optional<LaunchOptions> options;
  std::string text;  // help or version text
  int exit_code = 0;
};

// args excludes argv[0]. Throws LaunchError(kUsage) on bad input.
ParsedCommandLine parse_command_line(const std::vector<std::string>& args, const Environment& env);

// True when this launcher must coordinate with others (more than one node, or elastic).
inline bool is_multi_node(const LaunchOptions& o) { return o.nnodes_max > 1 || o.nnodes_min != o.nnodes_max; }

}  // namespace ddp::launch::cli
