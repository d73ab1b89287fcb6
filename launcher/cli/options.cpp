// CLI11 definition of ddp-launch's flags (prefix-command mode: parsing stops at PROGRAM)
// and parse_command_line's steps: environment defaults, flag prefixes, CLI11, placement
// defaults (mpirun/PMI, Slurm, JOB_COMPLETION_INDEX), conversion of the raw strings into
// LaunchOptions, cross-checks.
#include "launcher/cli/options.hpp"

#include <algorithm>
#include <cctype>
#include <tuple>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/text.hpp"
#include "launcher/cli/cli11_parse.hpp"
#include "launcher/cli/completion.hpp"
#include "launcher/cli/flag_prefix.hpp"
#include "launcher/cli/mpi_env.hpp"
#include "launcher/cli/slurm.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

constexpr const char* kDescription =
    "Launch a distributed PyTorch / LibTorch job: one worker process per local rank, "
    "torchrun-compatible environment, fail-fast supervision.";
constexpr int kStaticMasterPort = 29500;  // torchrun's default
// The stop grace in a Kubernetes pod (KUBERNETES_SERVICE_HOST set) unless given: SIGTERM to
// SIGKILL of the workers, with room for the report and the termination log inside the pod's
// default 30 s terminationGracePeriodSeconds.
constexpr double kPodShutdownTimeout = 20.0;

std::string pet_name(const std::string& long_name) {
  std::string out = "PET_";
  for (char c : long_name) out += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

// CLI11 2.1 cannot show a prefix command's PROGRAM in its usage line; this one does.
class UsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App*, std::string) const override {
    return "Usage: ddp-launch [OPTIONS] PROGRAM [ARGS...]\n";
  }
};

// Raw string values as CLI11 fills them; validated into LaunchOptions afterwards.
struct RawOptions {
  std::string nproc = "1", nnodes = "1:1", node_rank = "0", max_restarts = "0";
  std::string master_port, shutdown_timeout, hang_timeout, straggler_threshold, redirects = "0", tee = "0";
  std::string metrics_port;  // --metrics-port
  std::string local_ranks_filter, devices, signals = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";
  std::string monitor_interval, start_method, snapshot_persist_interval, logs_specs;
  std::string event_log_handler = "null", numa_binding, duplicate_stdout_filters, duplicate_stderr_filters;
  std::string print_completion;
  std::string rdzv_backend = "static";
  std::string log_line_prefix_template, rdzv_conf, local_rank_arg, stdin_rank = "auto", preload,
                                                                   worker_store = "launcher";
  bool warm_restarts = false;  // meaningful when GivenFlags::warm_restarts
  bool use_env = true, legacy_local_rank_arg = false, version = false;
  bool log_line_prefix_template_set = false;  // by TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE, even to ""
};

void define_flags(CLI::App& app, LaunchOptions& o, RawOptions& raw) {
  app.add_option("--nproc-per-node,--nproc_per_node", raw.nproc,
                 "Workers on this node: a number, gpu, cpu or auto (default 1)");
  app.add_option("--nnodes", raw.nnodes, "Number of nodes, N or MIN:MAX (default 1)");
  app.add_option("--node-rank,--node_rank", raw.node_rank, "This node's rank (default 0)");
  app.add_option("--master-addr,--master_addr", o.master_addr, "Address of rank 0's store (default 127.0.0.1)");
  app.add_option("--master-port,--master_port", raw.master_port,
                 "Port of rank 0's store (default: a free port on a single node, 29500 otherwise)");
  app.add_option("--local-addr,--local_addr", o.local_addr, "Address this node advertises");
  app.add_option("--rdzv-backend,--rdzv_backend", raw.rdzv_backend, "static (default), c10d or etcd (alias etcd-v2)");
  app.add_option("--rdzv-endpoint,--rdzv_endpoint", o.rdzv_endpoint, "host[:port] of the rendezvous");
  app.add_option("--rdzv-id,--rdzv_id", o.rdzv_id, "Job id shared by all nodes (TORCHELASTIC_RUN_ID)");
  app.add_option("--rdzv-conf,--rdzv_conf", raw.rdzv_conf,
                 "Rendezvous settings k=v,...: join_timeout, last_call_timeout, heartbeat_interval, "
                 "heartbeat_timeout (s), token, is_host, bind_all");
  app.add_flag("--standalone", o.standalone, "Single node with a free port and a fresh run id");
  app.add_option("--max-restarts,--max_restarts", raw.max_restarts,
                 "Restart the whole worker group up to N times after a failure (default 0)");
  app.add_flag("--warm-restarts,--warm_restarts,!--no-warm-restarts,!--no_warm_restarts", raw.warm_restarts,
               "Keep a pre-warmed standby per worker (torch imported, or LibTorch loaded for a program "
               "linked with libddp) that takes over a restart (default: on when --max-restarts > 0)");
  app.add_option("--preload", raw.preload,
                 "Python modules a Python standby imports besides torch, e.g. numpy,transformers");
  app.add_option("--shutdown-timeout,--shutdown_timeout", raw.shutdown_timeout,
                 "Seconds between SIGTERM and SIGKILL when stopping workers (default 30)");
  app.add_option("--hang-timeout,--hang_timeout", raw.hang_timeout,
                 "Seconds without progress from any worker (its progress record, fed by libddp or "
                 "python/ddp_progress.py; a job that feeds none: no output and no CPU time) before "
                 "the job counts as hung: stacks, then stop (default auto: 600 before the first "
                 "steps, then max(120, 10 x the slowest rank's recent step time); a number: that "
                 "fixed limit; 0: off)");
  app.add_option("--straggler-threshold,--straggler_threshold", raw.straggler_threshold,
                 "Report (once, no kill) a rank whose step time over 20 s is at least this many times "
                 "the job median (default 2; 0: off)");
  app.add_option("--signals-to-handle,--signals_to_handle", raw.signals,
                 "Signals forwarded to workers (default SIGTERM,SIGINT,SIGHUP,SIGQUIT; others such "
                 "as SIGUSR1 are forwarded without stopping the job)");
  app.add_option("--monitor-interval,--monitor_interval", raw.monitor_interval,
                 "Accepted for torchrun compatibility; ddp-launch reacts to exits at once");
  app.add_option("--start-method,--start_method", raw.start_method,
                 "Accepted for torchrun compatibility; workers are always exec'd");
  app.add_option("--event-log-handler,--event_log_handler", raw.event_log_handler,
                 "torchrun's event handler: null (default: the events go to RUN/events.jsonl only), console "
                 "(each event also printed on stderr) or dynamic_rendezvous (as null)");
  app.add_option("--numa-binding,--numa_binding", raw.numa_binding,
                 "Bind each worker to the CPUs near its GPU: node (the GPU's NUMA node) or socket (every "
                 "NUMA node of the GPU's socket); exclusive and core-complex are refused");
  app.add_option("--duplicate-stdout-filters,--duplicate_stdout_filters", raw.duplicate_stdout_filters,
                 "Comma list (',,' is a comma): tee'd stdout lines containing any of them are also written, "
                 "prefixed, to RUN/attempt_K/filtered_stdout.log (all ranks in one file)");
  app.add_option("--duplicate-stderr-filters,--duplicate_stderr_filters", raw.duplicate_stderr_filters,
                 "The same for stderr: RUN/attempt_K/filtered_stderr.log");
  app.add_option("--print-completion,--print_completion", raw.print_completion,
                 "Print a shell completion script (bash, zsh or tcsh) for ddp-launch and exit");
  app.add_option("--logs-specs,--logs_specs", raw.logs_specs,
                 "Accepted for torchrun compatibility: default (torchrun's own layout; ddp-launch's is "
                 "--log-dir/--redirects/--tee); torchrun.logs_specs plug-ins cannot be loaded");
  app.add_option("--worker-store,--worker_store", raw.worker_store,
                 "Who hosts the workers' c10d TCPStore at MASTER_ADDR:MASTER_PORT: launcher (default: "
                 "up before any worker starts, outlives them all; TORCHELASTIC_USE_AGENT_STORE=True) or "
                 "rank0 (worker rank 0 hosts it, as before; for an init_method that names its own store)");
  app.add_option("--snapshot-persist-dir,--snapshot_persist_dir", o.snapshot_persist_dir,
                 "Write local rank 0's newest in-memory snapshot to DIR/ckpt_<step>.pt in the background "
                 "(train --checkpoint-dir DIR resumes from it; created if missing; default: off)");
  app.add_option("--snapshot-persist-interval,--snapshot_persist_interval", raw.snapshot_persist_interval,
                 "Seconds between those writes while the workers run (default 300; 0: only when a worker "
                 "fails, at the end and on a stop; needs --snapshot-persist-dir)");
  app.add_option("--role", o.role, "Role name (ROLE_NAME, default 'default')");
  app.add_flag("-m,--module", o.module, "Run PROGRAM as a Python module (python -u -m)");
  app.add_flag("--no-python,--no_python", o.no_python, "Run PROGRAM directly, never through python");
  app.add_flag("--run-path,--run_path", o.run_path,
               "Run PROGRAM with the Python interpreter whatever its name (python -u PROGRAM)");
  app.add_flag("--use-env,--use_env", raw.use_env,
               "torch.distributed.launch compatibility: --use-env=false passes --local_rank=N; --use-env "
               "passes none (default: --local_rank=N or --local-rank=N to a Python script that declares it)");
  app.add_flag("--legacy-local-rank-arg,--legacy_local_rank_arg", raw.legacy_local_rank_arg,
               "Pass --local_rank=N to each worker before its arguments (as --use-env=false)");
  app.add_option("--local-rank-arg,--local_rank_arg", raw.local_rank_arg,
                 "Pass the local rank as an argument spelled local_rank (torch 1.x) or local-rank "
                 "(torch 2.x): --local-rank-arg=local-rank passes --local-rank=N");
  app.add_option("--stdin-rank,--stdin_rank", raw.stdin_rank,
                 "Which worker reads the launcher's stdin (for pdb/breakpoint/input): a global "
                 "rank, none, or auto (default: rank 0 if stdin is a terminal, else none)");
  app.add_option("--devices", raw.devices, "GPUs to use, e.g. 0,2,5 (indices into the visible devices)");
  app.add_flag("--virtual-local-rank,--virtual_local_rank", o.virtual_local_rank,
               "Isolation: each worker sees only its own GPU (CUDA_VISIBLE_DEVICES) and LOCAL_RANK=0");
  app.add_option("--log-dir,--log_dir", o.log_dir,
                 "Directory for per-worker logs: RUN/attempt_K/LOCAL_RANK/{stdout,stderr}.log");
  app.add_option("-r,--redirects", raw.redirects,
                 "Send streams to the log files only: 0 none, 1 stdout, 2 stderr, 3 both, or 0:1,1:2");
  app.add_option("-t,--tee", raw.tee, "Send streams to the log files and the console (same syntax)");
  app.add_option("--local-ranks-filter,--local_ranks_filter", raw.local_ranks_filter,
                 "Only these local ranks reach the console, e.g. 0,1 (files keep everything)");
  app.add_option("--log-line-prefix-template,--log_line_prefix_template", raw.log_line_prefix_template,
                 "Line prefix; macros ${rank} ${local_rank} ${role_name} (default '[rank${rank}]: ')");
  app.add_flag("--dry-run,--dry_run", o.dry_run, "Print each worker's command and environment; start nothing");
  app.add_flag("--version", raw.version, "Print the version and exit");
}

// The status endpoint and the termination log (docs/metrics.md).
void define_status_flags(CLI::App& app, LaunchOptions& o, RawOptions& raw) {
  app.add_option("--metrics-port,--metrics_port", raw.metrics_port,
                 "Serve Prometheus /metrics, /status.json and a status page at / on this port (0: a free "
                 "one, printed; default: off)");
  app.add_option("--metrics-addr,--metrics_addr", o.metrics_addr,
                 "Address the status endpoint listens on (default: 127.0.0.1 for a loopback job, else "
                 "this node's rendezvous address; 0.0.0.0 widens it)");
  app.add_flag("--metrics-show-args,--metrics_show_args", o.metrics_show_args,
               "Show the worker's arguments on the status page (off: they can hold secrets)");
  app.add_option("--termination-log,--termination_log", o.termination_log,
                 "On a failure, write the root cause (at most 4 KiB) here (default: /dev/termination-log "
                 "when it exists and is writable, as in a Kubernetes pod)");
}

// The whole CLI11 application: flags, usage line, footer; the last value of a flag wins.
void describe_app(CLI::App& app, LaunchOptions& o, RawOptions& raw) {
  app.prefix_command();
  app.formatter(std::make_shared<UsageFormatter>());
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  define_flags(app, o, raw);
  define_status_flags(app, o, raw);
  define_host_flags(app, o.hosts);
  app.footer(
      "Every flag also reads PET_<NAME> from the environment (e.g. PET_NPROC_PER_NODE=4; empty: "
      "unset); the command line wins. A long flag may be shortened to any unambiguous prefix "
      "(--nproc=2).\nExit status: the failed worker's code (128+N if killed by "
      "signal N), 130 on Ctrl-C, 120-127 for the launcher's own errors.");
}

// Environment defaults: PET_<NAME> of each flag as "--name=value" arguments, to be parsed
// before the command line (which therefore wins; an empty one, such as the
// PET_STANDALONE="" operators set, counts as unset); TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE and
// TORCH_ELASTIC_SHUTDOWN_TIMEOUT straight into raw (any flag, PET_* included, wins).
std::vector<std::string> environment_defaults(const CLI::App& app, const Environment& env, RawOptions& raw) {
  std::vector<std::string> args;
  for (const CLI::Option* opt : app.get_options()) {
    const auto& names = opt->get_lnames();
    if (names.empty() || names[0] == "help" || names[0] == "version" || names[0] == "print-completion") continue;
    auto value = lookup(env, pet_name(names[0]));
    if (value && !trim(*value).empty()) args.push_back("--" + names[0] + "=" + *value);
  }
  if (auto tmpl = lookup(env, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")) {
    raw.log_line_prefix_template = *tmpl;
    raw.log_line_prefix_template_set = true;
  }
  if (auto t = lookup(env, "TORCH_ELASTIC_SHUTDOWN_TIMEOUT")) raw.shutdown_timeout = *t;
  return args;
}

// Every flag's names, for expand_flag_prefixes.
std::vector<FlagNames> flag_names(const CLI::App& app) {
  std::vector<FlagNames> out;
  for (const CLI::Option* opt : app.get_options()) {
    FlagNames f;
    f.long_names = opt->get_lnames();
    for (const auto& s : opt->get_snames()) f.short_names += s;
    f.takes_value = opt->get_expected_min() != 0;  // flags expect nothing
    out.push_back(std::move(f));
  }
  return out;
}

// Runs CLI11 over args (prefixes of long flags first spelled out). Returns what --help or
// --version prints; nullopt when the launch goes on. A parse error becomes a usage error.
std::optional<ParsedCommandLine> run_cli11(CLI::App& app, std::vector<std::string> args, const RawOptions& raw) {
  args = expand_flag_prefixes(flag_names(app), args);
  if (parse_with_cli11(app, std::move(args),
                       [](const std::string& what) { return fmt::format("{}; see ddp-launch --help", what); }))
    return ParsedCommandLine{std::nullopt, app.help(), exit_code::kSuccess};
  if (!raw.print_completion.empty()) {
    std::vector<std::string> flags;
    for (const FlagNames& f : flag_names(app))
      for (const std::string& name : f.long_names) flags.push_back("--" + name);
    return ParsedCommandLine{std::nullopt, completion_script(raw.print_completion, flags), exit_code::kSuccess};
  }
  if (raw.version)
    return ParsedCommandLine{std::nullopt, std::string("ddp-launch ") + kLauncherVersion + "\n", exit_code::kSuccess};
  return std::nullopt;
}

// PROGRAM and its arguments: what CLI11 left after the launcher's own flags.
void take_program(std::vector<std::string> rest, LaunchOptions& o) {
  if (!rest.empty() && rest[0] == "--") rest.erase(rest.begin());
  if (rest.empty()) usage_error("no program given; usage: ddp-launch [OPTIONS] PROGRAM [ARGS...] (see --help)");
  if (rest[0].size() > 1 && rest[0][0] == '-')
    usage_error(fmt::format("unknown option '{}'; see ddp-launch --help for the flags", rest[0]));
  o.program = rest[0];
  o.program_args.assign(rest.begin() + 1, rest.end());
}

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

GivenFlags given_flags(const CLI::App& app) {
  return {app.count("--nnodes") > 0,
          app.count("--node-rank") > 0,
          app.count("--master-addr") > 0,
          app.count("--warm-restarts") > 0,
          app.count("--use-env") + app.count("--local-rank-arg") + app.count("--legacy-local-rank-arg") > 0,
          app.count("--shutdown-timeout") > 0,
          app.count("--worker-store") > 0,
          app.count("--duplicate-stdout-filters") > 0,
          app.count("--duplicate-stderr-filters") > 0};
}

// --rdzv-backend and --rdzv-endpoint, read once right after CLI11 (the mpirun check below
// needs the endpoint's host); a bad value is reported in its turn among the checks.
struct RendezvousRead {
  std::optional<RdzvBackend> backend;
  std::vector<HttpEndpoint> endpoints;
  std::string endpoint_error;  // "" when there is no endpoint, or it reads well
};

RendezvousRead read_rendezvous(const std::string& backend, const std::string& endpoint) {
  RendezvousRead r;
  r.backend = parse_rdzv_backend(backend);
  if (!r.backend || endpoint.empty()) return r;
  try {
    r.endpoints = parse_rdzv_endpoint(*r.backend, endpoint);
  } catch (const LaunchError& e) {
    r.endpoint_error = e.what();
  }
  return r;
}

// True when the job's address (the rendezvous endpoint, else --master-addr) is this
// machine's loopback: every "node" runs here (tests, a single-host rehearsal).
bool loopback_job(const LaunchOptions& o, const RendezvousRead& rdzv) {
  std::string host = o.master_addr;
  if (!o.rdzv_endpoint.empty() && o.rdzv_endpoint.find(',') == std::string::npos) {
    if (rdzv.endpoints.empty()) return false;  // reported by the endpoint's own check
    host = rdzv.endpoints.front().address.host;
  }
  return host == "localhost" || host.compare(0, 4, "127.") == 0 || host == "::1";
}

// mpirun / PMI defaults: started as one task per node, the task's rank and size are the
// node rank and count (explicit flags win). More than one task on a node would make every
// launcher there claim the node's GPUs: an error, unless the whole job runs on loopback.
// Returns whether it applied (then Slurm's defaults do not).
bool apply_mpi_defaults(const Environment& env, const RendezvousRead& rdzv, GivenFlags& given, RawOptions& raw,
                        LaunchOptions& o) {
  if (given.nnodes || o.standalone) return false;
  auto task = mpi_task(env);
  if (!task) return false;
  if (task->tasks_on_this_node > 1 && !loopback_job(o, rdzv))
    usage_error(
        fmt::format("{} started {} ddp-launch tasks on this node; start one per node (mpirun --map-by ppr:1:node, or "
                    "-npernode 1) and let --nproc-per-node start the workers",
                    task->source, task->tasks_on_this_node));
  raw.nnodes = std::to_string(task->size);
  given.nnodes = true;
  if (!given.node_rank) {
    raw.node_rank = std::to_string(task->rank);
    given.node_rank = true;
    o.notices.push_back(fmt::format("node rank {} of {} from {}", task->rank, task->size, task->source));
  }
  return true;
}

// JOB_COMPLETION_INDEX (an indexed Job: JobSet, Kubeflow's TrainJob) as the node rank when
// nothing else gave one.
void apply_job_completion_index(const Environment& env, GivenFlags& given, RawOptions& raw, LaunchOptions& o) {
  auto index = lookup(env, "JOB_COMPLETION_INDEX");
  if (given.node_rank || o.standalone || !index || trim(*index).empty()) return;
  auto n = parse_natural(trim(*index));
  if (!n || *n > 100000)
    usage_error(fmt::format("JOB_COMPLETION_INDEX='{}' is not a node rank; unset it or pass --node-rank", *index));
  raw.node_rank = std::to_string(*n);
  given.node_rank = true;
  o.notices.push_back(fmt::format("node rank {} from JOB_COMPLETION_INDEX (an indexed Job)", *n));
}

// Slurm defaults: under srun with no --nnodes (and not --standalone), one launcher per
// node, placed by the job's node count, node id and first host; explicit flags still win.
void apply_slurm_defaults(const Environment& env, GivenFlags& given, RawOptions& raw, LaunchOptions& o) {
  if (given.nnodes || o.standalone) return;
  auto job = slurm_job(env);
  if (!job) return;
  raw.nnodes = std::to_string(job->nnodes);
  if (!given.node_rank) raw.node_rank = std::to_string(job->node_rank);
  if (!given.master_addr) o.master_addr = job->first_host;
  given.node_rank = given.master_addr = true;
}

// --use-env=false, --legacy-local-rank-arg, --local-rank-arg=SPELLING: which argument
// carries the local rank ("" none). The 1.x spelling unless told otherwise.
void convert_local_rank_arg(const RawOptions& raw, LaunchOptions& o) {
  if (raw.local_rank_arg.empty()) {
    if (raw.legacy_local_rank_arg || !raw.use_env) o.local_rank_flag = "--local_rank";
    return;
  }
  if (raw.local_rank_arg != "local_rank" && raw.local_rank_arg != "local-rank")
    usage_error(
        fmt::format("--local-rank-arg '{}': use local_rank (--local_rank=N, torch 1.x "
                    "launch) or local-rank (--local-rank=N, torch 2.x launch)",
                    raw.local_rank_arg));
  o.local_rank_flag = "--" + raw.local_rank_arg;
}

// The flags torchrun 2.x added: --event-log-handler, --numa-binding, --start-method's
// choices, --duplicate-*-filters.
void convert_torchrun_2x_options(const RawOptions& raw, const GivenFlags& given, LaunchOptions& o) {
  check_choice("--event-log-handler", raw.event_log_handler, {"null", "console", "dynamic_rendezvous"},
               "the handlers torchrun registers; ddp-launch's events always go to RUN/events.jsonl, console "
               "also prints them");
  o.events_to_console = raw.event_log_handler == "console";
  if (!raw.start_method.empty())
    check_choice("--start-method", raw.start_method, {"spawn", "fork", "forkserver"},
                 "torchrun's choices; ddp-launch always execs its workers");
  if (!raw.numa_binding.empty()) {
    check_choice("--numa-binding", raw.numa_binding, {"node", "socket", "exclusive", "core-complex"},
                 "torch's AffinityMode values");
    if (raw.numa_binding == "exclusive" || raw.numa_binding == "core-complex")
      usage_error(
          fmt::format("--numa-binding={}: ddp-launch binds to whole NUMA nodes only; use node (the "
                      "CPUs of the GPU's NUMA node) or socket (those of every NUMA node on its socket)",
                      raw.numa_binding));
    o.numa_binding = raw.numa_binding;
  }
  if (given.duplicate_stdout_filters)
    o.duplicate_stdout_filters = parse_duplicate_filters(raw.duplicate_stdout_filters);
  if (given.duplicate_stderr_filters)
    o.duplicate_stderr_filters = parse_duplicate_filters(raw.duplicate_stderr_filters);
}

void convert_stdin_rank(const std::string& value, LaunchOptions& o) {
  if (value == "auto") return;
  o.stdin_rank_auto = false;
  if (value == "none") return;
  o.stdin_rank = parse_int_flag("--stdin-rank", value, 0, 1 << 30, "a global rank, none or auto");
}

// The worker and node counts, and which placement flags were given.
void convert_node_counts(const RawOptions& raw, const GivenFlags& given, LaunchOptions& o) {
  o.nproc = parse_nproc(raw.nproc);
  std::tie(o.nnodes_min, o.nnodes_max) = parse_nnodes(raw.nnodes);
  o.node_rank_given = given.node_rank;
  o.master_addr_given = given.master_addr;
  o.local_rank_auto = !given.local_rank_choice;
}

void check_logs_specs(const std::string& value) {
  if (value.empty() || value == "default" || value == "DefaultLogsSpecs" ||
      value == "torch.distributed.elastic.multiprocessing:DefaultLogsSpecs")
    return;
  usage_error(
      fmt::format("--logs-specs '{}': ddp-launch cannot load torchrun.logs_specs plug-ins (Python entry points); "
                  "drop the flag or pass default, and place the logs with --log-dir, --redirects and --tee",
                  value));
}

// The node rank (within the node count), the store's port and the restart budget.
void convert_rank_port_restarts(const RawOptions& raw, LaunchOptions& o) {
  o.node_rank = parse_int_flag("--node-rank", raw.node_rank, 0, o.nnodes_max - 1,
                               fmt::format("between 0 and nnodes-1 ({})", o.nnodes_max - 1));
  if (!raw.master_port.empty())
    o.master_port = parse_int_flag("--master-port", raw.master_port, 0, 65535, "a port from 0 to 65535");
  o.max_restarts = parse_int_flag("--max-restarts", raw.max_restarts, 0, 1000000, "0 or more");
}

// How the workers are stopped and watched: the stop grace (a pod's shorter default), the
// hang and straggler limits, the signals handled.
void convert_supervision(const RawOptions& raw, const Environment& env, const GivenFlags& given, LaunchOptions& o) {
  if (!given.shutdown_timeout && raw.shutdown_timeout.empty() && lookup(env, "KUBERNETES_SERVICE_HOST"))
    o.shutdown_timeout_s = kPodShutdownTimeout;
  if (!raw.shutdown_timeout.empty()) o.shutdown_timeout_s = parse_shutdown_timeout(raw.shutdown_timeout);
  if (!raw.hang_timeout.empty()) o.hang_timeout_s = parse_hang_timeout(raw.hang_timeout);
  if (!raw.straggler_threshold.empty()) o.straggler_threshold = parse_straggler_threshold(raw.straggler_threshold);
  o.signals_to_handle = parse_signal_list(raw.signals);
  o.signals_to_handle_text = raw.signals;
}

// Where the workers' streams go, which GPUs they see, the line prefix and the status port.
void convert_output_and_devices(const RawOptions& raw, LaunchOptions& o) {
  o.redirects = parse_stream_selection("--redirects", raw.redirects);
  o.tee = parse_stream_selection("--tee", raw.tee);
  if (!raw.local_ranks_filter.empty()) o.local_ranks_filter = parse_rank_filter(raw.local_ranks_filter);
  if (!raw.devices.empty()) o.devices = parse_device_indices(raw.devices);
  if (!raw.log_line_prefix_template.empty() || raw.log_line_prefix_template_set)
    o.log_line_prefix_template = raw.log_line_prefix_template;
  if (!raw.metrics_port.empty())
    o.metrics_port =
        parse_int_flag("--metrics-port", raw.metrics_port, 0, 65535, "a port from 0 to 65535 (0: a free one)");
}

// Warm restarts (on by default when there are restarts) and the modules a standby imports.
void convert_warm_restarts(const RawOptions& raw, const GivenFlags& given, LaunchOptions& o) {
  o.warm_restarts = given.warm_restarts ? raw.warm_restarts : o.max_restarts > 0;
  if (!raw.preload.empty()) o.preload = parse_module_list("--preload", raw.preload);
}

// Who hosts the workers' store: --worker-store, else torch's TORCH_DISABLE_SHARE_RDZV_TCP_STORE.
void convert_worker_store(const RawOptions& raw, const Environment& env, const GivenFlags& given, LaunchOptions& o) {
  if (raw.worker_store != "launcher" && raw.worker_store != "rank0")
    usage_error(
        fmt::format("--worker-store '{}': use launcher (the launcher hosts the workers' store, the default) "
                    "or rank0 (worker rank 0 hosts it)",
                    raw.worker_store));
  o.launcher_worker_store = raw.worker_store == "launcher";
  if (!given.worker_store && lookup(env, "TORCH_DISABLE_SHARE_RDZV_TCP_STORE").value_or("0") == "1") {
    o.launcher_worker_store = false;  // torch's switch for the agent's shared store
    o.notices.push_back(
        "TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1: worker rank 0 hosts the workers' store (as --worker-store=rank0)");
  }
}

void convert_snapshot_interval(const RawOptions& raw, LaunchOptions& o) {
  if (raw.snapshot_persist_interval.empty()) return;
  if (o.snapshot_persist_dir.empty())
    usage_error(
        "--snapshot-persist-interval needs --snapshot-persist-dir DIR: the folder the snapshots are "
        "written to");
  o.snapshot_persist_interval_s = parse_persist_interval(raw.snapshot_persist_interval);
}

// --rdzv-conf, with a notice for quotes it dropped and a warning per unknown key.
void convert_rdzv_conf(const RawOptions& raw, const Environment& env, LaunchOptions& o) {
  o.rdzv = parse_rdzv_conf(raw.rdzv_conf, env);
  if (o.rdzv.quotes_stripped)
    o.notices.push_back(
        fmt::format("--rdzv-conf: read {} without its quotes (a shell removes them; a "
                    "Kubernetes args list passes them on)",
                    trim(raw.rdzv_conf)));
  for (const auto& key : o.rdzv.ignored_keys)
    o.warnings.push_back(
        fmt::format("--rdzv-conf: ignoring unknown key '{}' (known: join_timeout, "
                    "last_call_timeout, heartbeat_interval, heartbeat_timeout, "
                    "token, is_host, bind_all, protocol, cacert, cert, key, username, password_file)",
                    key));
}

// The raw strings into LaunchOptions, each through its validator (in this order: the first
// bad flag is the one reported).
void convert_raw_options(const RawOptions& raw, const Environment& env, const GivenFlags& given, LaunchOptions& o) {
  convert_node_counts(raw, given, o);
  check_logs_specs(raw.logs_specs);
  convert_rank_port_restarts(raw, o);
  convert_supervision(raw, env, given, o);
  convert_output_and_devices(raw, o);
  convert_local_rank_arg(raw, o);
  convert_stdin_rank(raw.stdin_rank, o);
  convert_warm_restarts(raw, given, o);
  convert_worker_store(raw, env, given, o);
  convert_torchrun_2x_options(raw, given, o);
  convert_snapshot_interval(raw, o);
  convert_rdzv_conf(raw, env, o);
}

// How PROGRAM runs: -m, --no-python and --run-path exclude each other.
void check_program_kind(const LaunchOptions& o) {
  if (o.module && o.no_python) usage_error("-m/--module and --no-python contradict each other; a module needs python");
  if (o.module && o.run_path) usage_error("-m/--module and --run-path contradict each other; give a module or a file");
}

// The backend and endpoint read after CLI11, or the error either has.
void take_rendezvous(const RendezvousRead& rdzv, const std::string& backend_text, LaunchOptions& o) {
  if (!rdzv.backend)
    usage_error(fmt::format("--rdzv-backend '{}' is not supported; use static, c10d or etcd", backend_text));
  if (!rdzv.endpoint_error.empty()) usage_error(rdzv.endpoint_error);
  o.rdzv_backend = *rdzv.backend;
  o.rdzv_endpoints = rdzv.endpoints;
}

// Placement flags that contradict each other; each error says which one to drop or add.
void check_placement(const GivenFlags& given, const LaunchOptions& o) {
  if (o.standalone && o.nnodes_max > 1) usage_error("--standalone runs a single node; drop --nnodes or --standalone");
  if (is_multi_node(o) && !o.hosts.any()) {  // a host list places its nodes itself (remote/hosts_launch)
    if (o.rdzv_backend == RdzvBackend::kStatic) {
      if (o.nnodes_min != o.nnodes_max)
        usage_error(
            "--nnodes MIN:MAX needs --rdzv-backend=c10d with --rdzv-endpoint; the static "
            "backend takes a fixed --nnodes=N");
      if (!given.master_addr)
        usage_error(
            "a multi-node job needs --master-addr: the address of node 0, reachable from "
            "every node");
    } else if (o.rdzv_endpoints.empty()) {
      usage_error(o.rdzv_backend == RdzvBackend::kEtcd
                      ? "--rdzv-backend=etcd needs --rdzv-endpoint=HOST[:PORT][,HOST[:PORT]...]: etcd's client "
                        "addresses, the same on every node"
                      : "--rdzv-backend=c10d needs --rdzv-endpoint=HOST[:PORT], the same on every node");
    }
  }
  if (o.rdzv_id.empty()) usage_error("--rdzv-id must not be empty");
}

// What consistent flags imply: --standalone rendezvous through c10d (it is single-node, so
// never multi-node below); a static multi-node job without a port uses torchrun's.
void settle_implied_options(LaunchOptions& o) {
  if (o.standalone) o.rdzv_backend = RdzvBackend::kC10d;
  const bool is_static = o.rdzv_backend == RdzvBackend::kStatic;
  o.fresh_run_id = o.standalone || (is_static && o.rdzv_endpoints.empty() && !o.master_port && o.nnodes_max == 1 &&
                                    o.rdzv_id == "none" && !o.hosts.any());
  if (is_multi_node(o) && is_static && (!o.master_port || *o.master_port == 0)) o.master_port = kStaticMasterPort;
}

}  // namespace

ParsedCommandLine parse_command_line(const std::vector<std::string>& args, const Environment& env) {
  LaunchOptions o;
  RawOptions raw;
  CLI::App app{kDescription, "ddp-launch"};
  describe_app(app, o, raw);
  std::vector<std::string> full = environment_defaults(app, env, raw);
  full.insert(full.end(), args.begin(), args.end());
  if (auto help_or_version = run_cli11(app, std::move(full), raw)) return std::move(*help_or_version);
  take_program(app.remaining(), o);
  GivenFlags given = given_flags(app);
  o.nproc_given = app.count("--nproc-per-node") > 0;
  const RendezvousRead rdzv = read_rendezvous(raw.rdzv_backend, o.rdzv_endpoint);
  if (!apply_mpi_defaults(env, rdzv, given, raw, o)) apply_slurm_defaults(env, given, raw, o);
  apply_job_completion_index(env, given, raw, o);
  convert_raw_options(raw, env, given, o);
  check_program_kind(o);
  take_rendezvous(rdzv, raw.rdzv_backend, o);
  check_placement(given, o);
  settle_implied_options(o);
  return {std::move(o), "", exit_code::kSuccess};
}

}  // namespace ddp::launch::cli
