// Command-line options of ddp-launch: torchrun's flags in both spellings (--nproc-per-node
// and --nproc_per_node), PET_<NAME> environment defaults (command line wins), then
// validation into LaunchOptions. Pure: the environment is passed in; nothing is started.
// Errors throw LaunchError(exit_code::kUsage) with one actionable line.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/cli/environment.hpp"

namespace ddp::launch {

// --nproc-per-node: a count, or gpu / cpu / auto.
struct NprocSpec {
  enum class Kind { kCount, kGpu, kCpu, kAuto };
  Kind kind = Kind::kCount;
  int count = 1;  // for kCount
};

// -r/--redirects and -t/--tee: which streams (bit 1 stdout, bit 2 stderr), by local rank.
struct StreamSelection {
  int all = 0;                              // applies to ranks not listed below
  std::vector<std::pair<int, int>> per_rank;  // (local rank, bits)
  int for_rank(int local_rank) const;
};
inline constexpr int kStdout = 1;
inline constexpr int kStderr = 2;

// --rdzv-conf k=v,... (torchrun's keys where they exist). Seconds.
struct RendezvousConf {
  double join_timeout_s = 600;        // join_timeout (static: also `timeout`)
  double last_call_timeout_s = 30;    // last_call_timeout: wait for more nodes once MIN joined
  double heartbeat_interval_s = 1;    // heartbeat_interval (alias keep_alive_interval)
  double heartbeat_timeout_s = 3;     // heartbeat_timeout: silence before a node counts as lost
  std::string token;                  // token (or env DDP_LAUNCH_RDZV_TOKEN): shared secret
  std::optional<bool> is_host;        // is_host: force hosting (or not) the agent store
};

struct LaunchOptions {
  // What each worker runs.
  std::string program;                    // script, module or executable
  std::vector<std::string> program_args;  // everything after PROGRAM
  bool module = false;                    // -m: python -u -m PROGRAM
  bool no_python = false;                 // --no-python: run PROGRAM directly
  bool legacy_local_rank_arg = false;     // --use-env=false / --legacy-local-rank-arg
  // How many, where.
  NprocSpec nproc;
  int nnodes_min = 1;
  int nnodes_max = 1;
  int node_rank = 0;
  bool node_rank_given = false;  // explicit --node-rank (or Slurm): dynamic mode honours it
  std::string rdzv_backend = "static";
  std::string rdzv_endpoint;
  std::string rdzv_id = "none";
  RendezvousConf rdzv;
  bool standalone = false;
  std::string master_addr = "127.0.0.1";
  std::optional<int> master_port;  // absent: a free port on a single node
  std::string local_addr;
  std::string role = "default";
  // Supervision.
  int max_restarts = 0;
  double shutdown_timeout_s = 30.0;
  std::vector<int> signals_to_handle;  // signal numbers
  // GPUs.
  std::optional<std::vector<int>> devices;  // --devices 0,2,5 (indices into the visible list)
  bool virtual_local_rank = false;
  // Output.
  std::string log_dir;
  StreamSelection redirects;
  StreamSelection tee;
  std::optional<std::set<int>> local_ranks_filter;
  std::string log_line_prefix_template = "[rank${rank}]: ";
  bool dry_run = false;
};

// The outcome of reading the command line: either options to run, or text to print and
// an exit code (--help, --version).
struct ParsedCommandLine {
  std::optional<LaunchOptions> options;
  std::string text;   // help or version text
  int exit_code = 0;
};

// args excludes argv[0]. Throws LaunchError(kUsage) on bad input.
ParsedCommandLine parse_command_line(const std::vector<std::string>& args, const Environment& env);

// Validators, exposed for tests. Each throws LaunchError(kUsage) naming the flag.
NprocSpec parse_nproc(const std::string& value);
std::pair<int, int> parse_nnodes(const std::string& value);
StreamSelection parse_stream_selection(const std::string& flag, const std::string& value);
std::vector<int> parse_device_indices(const std::string& value);
std::set<int> parse_rank_filter(const std::string& value);
std::vector<int> parse_signal_list(const std::string& value);
RendezvousConf parse_rdzv_conf(const std::string& value, const Environment& env);

// True when this launcher must coordinate with others (more than one node, or elastic).
inline bool is_multi_node(const LaunchOptions& o) { return o.nnodes_max > 1 || o.nnodes_min != o.nnodes_max; }

// The default signals that stop the job when received (and are forwarded first).
const std::vector<int>& default_stop_signals();

}  // namespace ddp::launch
