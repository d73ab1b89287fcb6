

#include "contract/standby_handoff.hpp"
#include "launcher/cli/usage_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/os/durable_file.hpp"
#include "launcher/os/ports.hpp"
#include "launcher/os/process.hpp"
#include "launcher/os/standby_channel.hpp"
#include "launcher/app/resolve_job.hpp"
#include "launcher/worker/numa_binding.hpp"
#include "launcher/worker/script_local_rank.hpp"
#include <algorithm>
#include <fmt/format.h>
#include <random>
#include <thread>
#include <unistd.h>

namespace ddp::launch {
namespace {

// A random (version 4) UUID, as torchrun's run id for --standalone and a plain single-node job.
std::string random_uuid() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
  const uint64_t hi = (gen() & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;
  const uint64_t lo = (gen() & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;
  return fmt::format("{:08x}-{:04x}-{:04x}-{:04x}-{:012x}", hi >> 32, (hi >> 16) & 0xffff, hi & 0xffff, lo >> 48,
                     lo & 0xffffffffffffULL);
}

// --numa-binding: the CPUs of each local rank, its GPU being CUDA device --devices[r] (else r).
std::vector<std::vector<int>> numa_binding(const cli::LaunchOptions& o, const worker::DevicePlan& devices) {
  if (o.numa_binding.empty()) return {};
  if (!devices.uses_gpus)
    cli::usage_error(
        fmt::format("--numa-binding={} binds each worker near its GPU, but the workers use no GPUs "
                    "(--nproc-per-node=cpu, or no NVIDIA GPU here); drop --numa-binding",
                    o.numa_binding));
  std::vector<int> ordinals;
  for (int r = 0; r < devices.nproc; ++r) ordinals.push_back(o.devices ? (*o.devices)[r] : r);
  auto cpus = worker::plan_numa_binding(o.numa_binding, ordinals);
  for (size_t r = 0; r < cpus.size(); ++r)
    console::launcher_notice(fmt::format("--numa-binding={}: local rank {} runs on CPUs {}", o.numa_binding, r,
                                         worker::format_cpu_list(cpus[r])));
  return cpus;
}

bool any_stream(const cli::StreamSelection& s) {
  if (s.all != 0) return true;
  for (const auto& [rank, bits] : s.per_rank)
    if (bits != 0) return true;
  return false;
}

worker::DevicePlan plan_this_node_devices(const cli::LaunchOptions& o, const cli::Environment& env) {
  worker::DeviceInputs inputs;
  inputs.cuda_visible_devices = cli::lookup(env, "CUDA_VISIBLE_DEVICES");
  inputs.driver_count = worker::count_cuda_devices;
  inputs.cpu_count = static_cast<int>(std::thread::hardware_concurrency());
  return plan_devices(device_spec(o), inputs);
}

node::SingleNodeSpec single_node_spec(const cli::LaunchOptions& o) {
  node::SingleNodeSpec s;
  s.node_rank = o.node_rank;
  s.nnodes = o.nnodes_max;
  s.master_addr = o.master_addr;
  if (o.master_port && *o.master_port != 0 && !o.standalone) s.master_port = *o.master_port;
  return s;
}

rendezvous::MultiNodeSpec multi_node_spec(const cli::LaunchOptions& o) {
  rendezvous::MultiNodeSpec s;
  s.rdzv_backend = o.rdzv_backend;
  s.rdzv_endpoints = o.rdzv_endpoints;
  s.rdzv = o.rdzv;
  s.master_addr = o.master_addr;
  s.master_port = o.master_port;
  s.node_rank = o.node_rank;
  s.node_rank_given = o.node_rank_given;
  s.local_addr = o.local_addr;
  s.nnodes_min = o.nnodes_min;
  s.nnodes_max = o.nnodes_max;
  s.strikes = o.strikes;
  return s;
}

// Where the status endpoint listens unless --metrics-addr says: 127.0.0.1 for a job whose
// rendezvous (or master) address is loopback, else this node's address (--local-addr or its
// host name) where it is one of this machine's IP addresses, else every interface.
std::string status_listen_host(const cli::LaunchOptions& o) {
  if (!o.metrics_addr.empty()) return o.metrics_addr;
  std::string job_host = o.master_addr;
  if (!o.rdzv_endpoints.empty() && o.rdzv_backend != cli::RdzvBackend::kEtcd)
    job_host = o.rdzv_endpoints.front().address.host;
  if (job_host == "localhost" || os::is_loopback_address(job_host)) return "127.0.0.1";
  return os::store_listen_host(o.local_addr.empty() ? os::host_name() : o.local_addr);
}

report::StatusSpec status_spec(const cli::LaunchOptions& o) {
  report::StatusSpec s;
  s.enabled = o.metrics_port.has_value();
  s.port = static_cast<uint16_t>(o.metrics_port.value_or(0));
  if (s.enabled) s.host = status_listen_host(o);
  s.show_args = o.metrics_show_args;
  s.backend = cli::rdzv_backend_name(o.rdzv_backend);
  s.termination_log = o.termination_log;
  return s;
}

}  // namespace

worker::DeviceSpec device_spec(const cli::LaunchOptions& o) {
  return worker::DeviceSpec{o.nproc, o.devices, o.virtual_local_rank};
}

worker::WorkerCommandSpec worker_command_spec(const cli::LaunchOptions& o) {
  return worker::WorkerCommandSpec{o.program, o.program_args, o.module, o.no_python, o.run_path, o.local_rank_flag};
}

// --stdin-rank: the rank given the launcher's stdin; auto: rank 0 when stdin is a terminal.
std::optional<int> stdin_rank(const cli::LaunchOptions& o) {
  if (!o.stdin_rank_auto) return o.stdin_rank;
  return os::is_terminal(STDIN_FILENO) ? std::optional<int>(0) : std::nullopt;
}

supervise::SupervisorConfig supervisor_config(const cli::LaunchOptions& o) {
  supervise::SupervisorConfig config;
  config.shutdown_timeout_s = o.shutdown_timeout_s;
  config.hang_timeout_s = o.hang_timeout_s;
  config.straggler_threshold = o.straggler_threshold;
  const auto& stops = cli::default_stop_signals();
  for (int s : o.signals_to_handle)
    (std::find(stops.begin(), stops.end(), s) != stops.end() ? config.stop_signals : config.forward_signals)
        .push_back(s);
  return config;
}

// Warm restarts: the scan for libddp's hook marker only where it can matter (once).
warm::StandbyPlan standby_plan(const cli::LaunchOptions& o, const node::JobConfig& job) {
  warm::StandbyRequest r{o.warm_restarts,         o.max_restarts, o.program, job.command.executable,
                         job.command.argv_for(0), false,          o.preload};
  if (r.warm_restarts && r.max_restarts > 0 && !warm::is_python_executable(r.executable))
    r.has_hook_marker = os::file_contains(r.executable, standby::kHookMarker);
  return warm::plan_standbys(r);
}

cli::LaunchOptions placed_options(const cli::LaunchOptions& flags, const many_hosts::plan::AgentPlacement& p) {
  cli::LaunchOptions o = flags;
  if (p.nnodes_min > 0) {  // elastic: the rendezvous numbers the nodes
    o.nnodes_min = p.nnodes_min;
    o.nnodes_max = p.nnodes_max;
    if (!p.rdzv_endpoint.empty()) {
      o.rdzv_backend = cli::RdzvBackend::kC10d;
      o.rdzv_endpoint = p.rdzv_endpoint;
      o.rdzv_endpoints = cli::parse_rdzv_endpoint(o.rdzv_backend, p.rdzv_endpoint);
    }
  } else {
    o.nnodes_min = o.nnodes_max = p.nnodes;
    o.node_rank = p.node_rank;
    o.node_rank_given = true;
  }
  if (p.nproc) o.nproc = cli::NprocSpec{cli::NprocSpec::Kind::kCount, *p.nproc};
  if (!p.master_addr.empty()) o.master_addr = p.master_addr;
  if (p.master_port) o.master_port = *p.master_port;
  const bool loopback = p.host == "localhost" || p.host.rfind("127.", 0) == 0 || p.host == "::1";
  if (o.local_addr.empty() && p.nnodes > 1 && !loopback) o.local_addr = p.host;
  o.stdin_rank_auto = false;  // stdin is the launching machine's channel, no worker's
  o.stdin_rank.reset();
  return o;
}

ResolvedJob resolve_job(const cli::LaunchOptions& flags, const cli::Environment& env, const Placement& placement) {
  const cli::LaunchOptions o = placement ? placed_options(flags, *placement) : flags;
  ResolvedJob r;
  node::JobConfig& job = r.job;
  job.devices = plan_this_node_devices(o, env);
  job.command = worker::resolve_worker_command(worker_command_spec(o), env);
  if (o.local_rank_auto) {
    const std::string notice = worker::pass_declared_local_rank(worker_command_spec(o), job.command);
    if (!notice.empty()) console::launcher_notice(notice);
  }
  job.program = o.program;
  job.run_id = o.fresh_run_id ? random_uuid() : o.rdzv_id;
  job.role = o.role;
  job.max_restarts = o.max_restarts;
  job.launcher_worker_store = o.launcher_worker_store;
  job.containment = o.containment;
  job.restrict_worker_store_peers = !o.rdzv.token.empty();
  job.layout = worker::RunLayoutSpec{o.log_dir, job.run_id, any_stream(o.redirects) || any_stream(o.tee)};
  job.output = node::OutputSpec{o.redirects,
                                o.tee,
                                o.local_ranks_filter,
                                o.log_line_prefix_template,
                                stdin_rank(o),
                                o.duplicate_stdout_filters,
                                o.duplicate_stderr_filters};
  job.signals_to_handle = o.signals_to_handle_text;
  job.events_to_console = o.events_to_console;
  job.worker_cpus = numa_binding(o, job.devices);
  job.supervisor = supervisor_config(o);
  job.supervisor.tool_path = cli::lookup(env, "PATH").value_or("/usr/local/bin:/usr/bin:/bin");
  job.health = cli::worker_health_spec(env, random_uuid());
  job.supervisor.d_state_timeout_s = job.health.d_state_timeout_s;
  job.warm_restarts = o.warm_restarts;
  job.standby = standby_plan(o, job);
  job.snapshot_persist = {o.snapshot_persist_dir, o.snapshot_persist_interval_s};
  if (o.preflight) job.preflight = o.preflight_conf;
  if (!o.snapshot_persist_dir.empty() && !o.dry_run) {
    const std::string error = os::prepare_writable_dir(o.snapshot_persist_dir);
    if (!error.empty())
      cli::usage_error(
          fmt::format("--snapshot-persist-dir {}: {}; give a writable folder", o.snapshot_persist_dir, error));
  }
  job.status = status_spec(o);
  r.single_node = single_node_spec(o);
  r.multi_node = multi_node_spec(o);
  r.multi_node_job = cli::is_multi_node(o);
  r.dry_run = o.dry_run;
  return r;
}

}  // namespace ddp::launch
