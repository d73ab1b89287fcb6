// CLI11 definition of ddp-launch's flags (prefix-command mode: parsing stops at PROGRAM)
// and parse_command_line's steps: environment defaults, flag prefixes, CLI11, placement
// defaults (placement_defaults.cpp), conversion of the raw strings into LaunchOptions and
// cross-checks (option_conversion.cpp).
#include "launcher/cli/options.hpp"

#include <algorithm>
#include <cctype>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/text.hpp"
#include "launcher/cli/cli11_parse.hpp"
#include "launcher/cli/completion.hpp"
#include "launcher/cli/flag_prefix.hpp"
#include "launcher/cli/raw_options.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

constexpr const char* kDescription =
    "Launch a distributed PyTorch / LibTorch job: one worker process per local rank, "
    "torchrun-compatible environment, fail-fast supervision.";

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
  app.add_option("--containment", raw.containment,
                 "How the processes the workers start are ended with the job: auto (default: a cgroup "
                 "where this machine allows one, killed whole at each attempt's end, else subreaper), "
                 "cgroup (required) or subreaper (the launcher adopts every orphan below it; no cgroup)");
  app.add_option("--snapshot-persist-dir,--snapshot_persist_dir", o.snapshot_persist_dir,
                 "Write local rank 0's newest in-memory snapshot to DIR/ckpt_<step>.pt in the background "
                 "(train --checkpoint-dir DIR resumes from it; created if missing; default: off)");
  app.add_option("--snapshot-persist-interval,--snapshot_persist_interval", raw.snapshot_persist_interval,
                 "Seconds between those writes while the workers run (default 300; 0: only when a worker "
                 "fails, at the end and on a stop; needs --snapshot-persist-dir)");
  app.add_flag("--preflight", o.preflight,
               "Before any worker starts, each node checks itself in about 0.2 s: every core's matrix-multiply "
               "rate against its median core, memory available, /dev/shm and the folders the job writes "
               "(free space, writable); a failing check stops the node with exit 118 (default: off)");
  app.add_option("--preflight-conf,--preflight_conf", raw.preflight_conf,
                 "The checks' thresholds k=v,...: cpu_warn, cpu_fail (fractions of the median core), cpu_ms, "
                 "mem_gib, shm_gib_per_worker, disk_gib (needs --preflight)");
  app.add_option("--strikes", raw.strikes,
                 "COUNT[/SECONDS]: a node whose own worker was a round's root cause COUNT times within SECONDS "
                 "is left out of later rounds while --nnodes MIN nodes remain (default 3/3600; 0: never)");
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
