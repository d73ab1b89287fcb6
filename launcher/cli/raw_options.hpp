// The steps of parse_command_line after CLI11 (options.cpp runs them in order): the raw
// strings CLI11 fills, which flags were given, the placement defaults of mpirun/PMI, Slurm
// and JOB_COMPLETION_INDEX (placement_defaults.cpp), the conversion of each raw string into
// LaunchOptions and the cross-checks (option_conversion.cpp). Internal to cli/; pure; errors
// throw LaunchError(kUsage) through usage_error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"
#include "launcher/cli/options.hpp"

namespace ddp::launch::cli {

// Raw string values as CLI11 fills them; validated into LaunchOptions afterwards.
struct RawOptions {
  std::string nproc = "1", nnodes = "1:1", node_rank = "0", max_restarts = "0";
  std::string master_port, shutdown_timeout, hang_timeout, straggler_threshold, redirects = "0", tee = "0";
  std::string metrics_port;  // --metrics-port
  std::string local_ranks_filter, devices, signals = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";
  std::string monitor_interval, start_method, snapshot_persist_interval, logs_specs, preflight_conf, strikes;
  std::string event_log_handler = "null", numa_binding, duplicate_stdout_filters, duplicate_stderr_filters;
  std::string print_completion;
  std::string rdzv_backend = "static";
  std::string log_line_prefix_template, rdzv_conf, local_rank_arg, stdin_rank = "auto", preload,
                                                                   worker_store = "launcher", containment = "auto";
  bool warm_restarts = false;  // meaningful when GivenFlags::warm_restarts
  bool use_env = true, legacy_local_rank_arg = false, version = false;
  bool log_line_prefix_template_set = false;  // by TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, even to ""
};

// Placement flags given explicitly (on the command line or as PET_*), or by Slurm.
struct GivenFlags {
  bool nnodes = false;
  bool node_rank = false;
  bool master_addr = false;
  bool warm_restarts = false;      // --warm-restarts or --no-warm-restarts
  bool local_rank_choice = false;  // --use-env, --local-rank-arg or --legacy-local-rank-arg
  bool shutdown_timeout = false;   // --shutdown-timeout
  bool worker_store = false;       // --worker-store
  bool duplicate_stdout_filters = false;
  bool duplicate_stderr_filters = false;
};

// --rdzv-backend and --rdzv-endpoint, read once right after CLI11 (the mpirun check needs
// the endpoint's host); a bad value is reported in its turn among the checks (take_rendezvous).
struct RendezvousRead {
  std::optional<RdzvBackend> backend;
  std::vector<HttpEndpoint> endpoints;
  std::string endpoint_error;  // "" when there is no endpoint, or it reads well
};
RendezvousRead read_rendezvous(const std::string& backend, const std::string& endpoint);

// mpirun / PMI defaults: started as one task per node, the task's rank and size are the
// node rank and count (explicit flags win). Returns whether they applied (then Slurm's do not).
bool apply_mpi_defaults(const Environment& env, const RendezvousRead& rdzv, GivenFlags& given, RawOptions& raw,
                        LaunchOptions& o);
// Slurm defaults: under srun with no --nnodes, the job's node count, node id and first host.
void apply_slurm_defaults(const Environment& env, GivenFlags& given, RawOptions& raw, LaunchOptions& o);
// JOB_COMPLETION_INDEX (an indexed Job) as the node rank when nothing else gave one.
void apply_job_completion_index(const Environment& env, GivenFlags& given, RawOptions& raw, LaunchOptions& o);

// The raw strings into LaunchOptions, each through its validator (option_parsers.hpp).
void convert_raw_options(const RawOptions& raw, const Environment& env, const GivenFlags& given, LaunchOptions& o);
// -m, --no-python and --run-path exclude each other.
void check_program_kind(const LaunchOptions& o);
// The backend and endpoint read after CLI11 into o, or the error either has.
void take_rendezvous(const RendezvousRead& rdzv, const std::string& backend_text, LaunchOptions& o);
// Placement flags that contradict each other.
void check_placement(const GivenFlags& given, const LaunchOptions& o);
// What consistent flags imply (--standalone's c10d, a fresh run id, torchrun's static port).
void settle_implied_options(LaunchOptions& o);

}  // namespace ddp::launch::cli
