// The conversion of each raw flag value into LaunchOptions, and the cross-checks
// (raw_options.hpp). The order of the steps is the order errors are found in.
#include <tuple>

#include <fmt/format.h>

#include "launcher/base/text.hpp"
#include "launcher/cli/preflight_conf.hpp"
#include "launcher/cli/strike_policy.hpp"
#include "launcher/cli/raw_options.hpp"
#include "launcher/cli/usage_error.hpp"

namespace ddp::launch::cli {
namespace {

constexpr int kStaticMasterPort = 29500;  // torchrun's default
// The stop grace in a Kubernetes pod (KUBERNETES_SERVICE_HOST set) unless given: SIGTERM to
// SIGKILL of the workers, with room for the report and the termination log inside the pod's
// default 30 s terminationGracePeriodSeconds.
constexpr double kPodShutdownTimeout = 20.0;

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

// --containment: auto, cgroup or subreaper.
void convert_containment(const std::string& value, LaunchOptions& o) {
  if (value == "auto") o.containment = ContainmentRequest::kAuto;
  else if (value == "cgroup") o.containment = ContainmentRequest::kCgroup;
  else if (value == "subreaper") o.containment = ContainmentRequest::kSubreaper;
  else
    usage_error(
        fmt::format("--containment '{}': use auto (a cgroup where the machine allows one, the default), "
                    "cgroup or subreaper",
                    value));
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

void convert_preflight_conf(const RawOptions& raw, LaunchOptions& o) {
  if (raw.preflight_conf.empty()) return;
  if (!o.preflight) usage_error("--preflight-conf needs --preflight: the thresholds are those of the checks it runs");
  o.preflight_conf = parse_preflight_conf(raw.preflight_conf);
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

}  // namespace

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
  convert_containment(raw.containment, o);
  convert_torchrun_2x_options(raw, given, o);
  convert_snapshot_interval(raw, o);
  convert_preflight_conf(raw, o);
  if (!raw.strikes.empty()) o.strikes = parse_strike_policy(raw.strikes);
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
  if (is_multi_node(o) && !o.hosts.any()) {  // a host list places its nodes itself (many_hosts/hosts_launch)
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

}  // namespace ddp::launch::cli
