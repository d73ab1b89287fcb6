// CLI11 definition of ddp-launch's flags (prefix-command mode: parsing stops at PROGRAM),
// PET_* defaults, and the validators that turn strings into LaunchOptions.
#include "launcher/cli/options.hpp"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <limits>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/signal_names.hpp"
#include "launcher/cli/slurm.hpp"

namespace ddp::launch {
namespace {

constexpr const char* kVersion = "ddp-launch 0.1.0";

[[noreturn]] void usage_error(const std::string& message) {
  throw LaunchError(exit_code::kUsage, message);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    out.push_back(s.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// A whole-string non-negative integer (no sign, no spaces); nullopt otherwise.
std::optional<long long> parse_natural(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoll(s);
}

int parse_int_flag(const std::string& flag, const std::string& value, long long min, long long max,
                   const std::string& hint) {
  std::string v = trim(value);
  bool negative = !v.empty() && v[0] == '-';
  auto n = parse_natural(negative ? v.substr(1) : v);
  if (!n || (negative ? -*n : *n) < min || (negative ? -*n : *n) > max)
    usage_error(fmt::format("{} must be {}, got '{}'", flag, hint, value));
  return static_cast<int>(negative ? -*n : *n);
}

// "0,2,5" -> {0,2,5}; any item that is not a number in [0, max] -> usage_error(error).
std::vector<int> parse_number_list(const std::string& value, long long max, const std::string& error) {
  std::vector<int> out;
  for (const auto& item : split(trim(value), ',')) {
    auto n = parse_natural(trim(item));
    if (!n || *n > max) usage_error(error);
    out.push_back(static_cast<int>(*n));
  }
  return out;
}

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
  std::string master_port, shutdown_timeout, redirects = "0", tee = "0";
  std::string local_ranks_filter, devices, signals = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";
  std::string monitor_interval, start_method;
  std::string log_line_prefix_template, rdzv_conf;
  bool use_env = true, legacy_local_rank_arg = false, version = false;
};

void define_flags(CLI::App& app, LaunchOptions& o, RawOptions& raw) {
  app.add_option("--nproc-per-node,--nproc_per_node", raw.nproc,
                 "Workers on this node: a number, gpu, cpu or auto (default 1)");
  app.add_option("--nnodes", raw.nnodes, "Number of nodes, N or MIN:MAX (default 1)");
  app.add_option("--node-rank,--node_rank", raw.node_rank, "This node's rank (default 0)");
  app.add_option("--master-addr,--master_addr", o.master_addr,
                 "Address of rank 0's store (default 127.0.0.1)");
  app.add_option("--master-port,--master_port", raw.master_port,
                 "Port of rank 0's store (default: a free port on a single node, 29500 otherwise)");
  app.add_option("--local-addr,--local_addr", o.local_addr, "Address this node advertises");
  app.add_option("--rdzv-backend,--rdzv_backend", o.rdzv_backend, "static (default) or c10d");
  app.add_option("--rdzv-endpoint,--rdzv_endpoint", o.rdzv_endpoint, "host[:port] of the rendezvous");
  app.add_option("--rdzv-id,--rdzv_id", o.rdzv_id, "Job id shared by all nodes (TORCHELASTIC_RUN_ID)");
  app.add_option("--rdzv-conf,--rdzv_conf", raw.rdzv_conf,
                 "Rendezvous settings k=v,...: join_timeout, last_call_timeout, heartbeat_interval, "
                 "heartbeat_timeout (s), token, is_host");
  app.add_flag("--standalone", o.standalone, "Single node with a free port and a fresh run id");
  app.add_option("--max-restarts,--max_restarts", raw.max_restarts,
                 "Restart the whole worker group up to N times after a failure (default 0)");
  app.add_option("--shutdown-timeout,--shutdown_timeout", raw.shutdown_timeout,
                 "Seconds between SIGTERM and SIGKILL when stopping workers (default 30)");
  app.add_option("--signals-to-handle,--signals_to_handle", raw.signals,
                 "Signals forwarded to workers (default SIGTERM,SIGINT,SIGHUP,SIGQUIT; others such "
                 "as SIGUSR1 are forwarded without stopping the job)");
  app.add_option("--monitor-interval,--monitor_interval", raw.monitor_interval,
                 "Accepted for torchrun compatibility; ddp-launch reacts to exits at once");
  app.add_option("--start-method,--start_method", raw.start_method,
                 "Accepted for torchrun compatibility; workers are always exec'd");
  app.add_option("--role", o.role, "Role name (ROLE_NAME, default 'default')");
  app.add_flag("-m,--module", o.module, "Run PROGRAM as a Python module (python -u -m)");
  app.add_flag("--no-python,--no_python", o.no_python, "Run PROGRAM directly, never through python");
  app.add_flag("--use-env,--use_env", raw.use_env,
               "torch.distributed.launch compatibility: --use-env=false passes --local-rank=N");
  app.add_flag("--legacy-local-rank-arg,--legacy_local_rank_arg", raw.legacy_local_rank_arg,
               "Pass --local-rank=N to each worker before its arguments");
  app.add_option("--devices", raw.devices,
                 "GPUs to use, e.g. 0,2,5 (indices into the visible devices)");
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

}  // namespace

int StreamSelection::for_rank(int local_rank) const {
  for (const auto& [rank, bits] : per_rank)
    if (rank == local_rank) return bits;
  return all;
}

const std::vector<int>& default_stop_signals() {
  static const std::vector<int> kDefault = parse_signal_list("SIGTERM,SIGINT,SIGHUP,SIGQUIT");
  return kDefault;
}

NprocSpec parse_nproc(const std::string& value) {
  std::string v = trim(value);
  if (v == "gpu") return {NprocSpec::Kind::kGpu, 0};
  if (v == "cpu") return {NprocSpec::Kind::kCpu, 0};
  if (v == "auto") return {NprocSpec::Kind::kAuto, 0};
  auto n = parse_natural(v);
  if (!n || *n < 1 || *n > 4096)
    usage_error(fmt::format("--nproc-per-node must be a positive number of workers, gpu, cpu "
                            "or auto; got '{}'",
                            value));
  return {NprocSpec::Kind::kCount, static_cast<int>(*n)};
}

std::pair<int, int> parse_nnodes(const std::string& value) {
  auto parts = split(trim(value), ':');
  if (parts.size() > 2) usage_error(fmt::format("--nnodes must be N or MIN:MAX, got '{}'", value));
  auto lo = parse_natural(parts[0]);
  auto hi = parse_natural(parts.back());
  if (!lo || !hi || *lo < 1 || *lo > *hi || *hi > 100000)
    usage_error(fmt::format("--nnodes must be N or MIN:MAX with 0 < MIN <= MAX, got '{}'", value));
  return {static_cast<int>(*lo), static_cast<int>(*hi)};
}

StreamSelection parse_stream_selection(const std::string& flag, const std::string& value) {
  auto bad = [&] {
    usage_error(fmt::format("{} must be 0 (none), 1 (stdout), 2 (stderr), 3 (both) or a per-rank "
                            "list like 0:3,1:1; got '{}'",
                            flag, value));
  };
  StreamSelection sel;
  std::string v = trim(value);
  if (v.empty()) return sel;
  if (v.find(':') == std::string::npos) {
    auto n = parse_natural(v);
    if (!n || *n > 3) bad();
    sel.all = static_cast<int>(*n);
    return sel;
  }
  for (const auto& item : split(v, ',')) {
    auto kv = split(trim(item), ':');
    if (kv.size() != 2) bad();
    auto rank = parse_natural(kv[0]);
    auto bits = parse_natural(kv[1]);
    if (!rank || !bits || *bits > 3 || *rank > 100000) bad();
    sel.per_rank.emplace_back(static_cast<int>(*rank), static_cast<int>(*bits));
  }
  return sel;
}

std::vector<int> parse_device_indices(const std::string& value) {
  std::vector<int> out = parse_number_list(
      value, 1023, fmt::format("--devices must be a comma-separated list of GPU indices like 0,2,5; got '{}'", value));
  for (size_t i = 0; i < out.size(); ++i)
    if (std::find(out.begin(), out.begin() + static_cast<long>(i), out[i]) != out.begin() + static_cast<long>(i))
      usage_error(fmt::format("--devices lists GPU {} twice in '{}'; give each GPU once", out[i], value));
  return out;
}

std::set<int> parse_rank_filter(const std::string& value) {
  auto ranks = parse_number_list(
      value, 100000, fmt::format("--local-ranks-filter must be local ranks like 0,1; got '{}'", value));
  return {ranks.begin(), ranks.end()};
}

std::vector<int> parse_signal_list(const std::string& value) {
  std::vector<int> out;
  for (const auto& item : split(trim(value), ',')) {
    int n = signal_number(trim(item));
    if (n < 0 || n == SIGKILL || n == SIGSTOP)
      usage_error(fmt::format("--signals-to-handle: '{}' is not a signal that can be handled; use "
                              "names like SIGTERM,SIGUSR1",
                              trim(item)));
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

RendezvousConf parse_rdzv_conf(const std::string& value, const Environment& env) {
  RendezvousConf conf;
  if (auto token = lookup(env, "DDP_LAUNCH_RDZV_TOKEN")) conf.token = *token;
  if (trim(value).empty()) return conf;
  auto seconds = [&](const std::string& key, const std::string& v) {
    try {
      size_t used = 0;
      double d = std::stod(v, &used);
      if (used == v.size() && d > 0) return d;
    } catch (const std::exception&) {  // not a number: the usage error below says so
    }
    usage_error(fmt::format("--rdzv-conf {}={}: expected a number of seconds > 0", key, v));
  };
  for (const auto& item : split(trim(value), ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos)
      usage_error(fmt::format("--rdzv-conf expects key=value items, got '{}'", item));
    std::string key = trim(item.substr(0, eq));
    std::string v = trim(item.substr(eq + 1));
    if (key == "join_timeout" || key == "timeout") conf.join_timeout_s = seconds(key, v);
    else if (key == "last_call_timeout") conf.last_call_timeout_s = seconds(key, v);
    else if (key == "heartbeat_interval" || key == "keep_alive_interval") conf.heartbeat_interval_s = seconds(key, v);
    else if (key == "heartbeat_timeout") conf.heartbeat_timeout_s = seconds(key, v);
    else if (key == "token") conf.token = v;
    else if (key == "is_host") conf.is_host = (v == "1" || v == "true" || v == "True");
    else if (key == "close_timeout" || key == "keep_alive_max_attempt" || key == "read_timeout" ||
             key == "store_type" || key == "use_libuv")
      continue;  // torchrun keys with no meaning here
    else
      usage_error(fmt::format("--rdzv-conf: unknown key '{}'; known: join_timeout, "
                              "last_call_timeout, heartbeat_interval, heartbeat_timeout, token, is_host",
                              key));
  }
  if (conf.heartbeat_timeout_s <= conf.heartbeat_interval_s)
    usage_error("--rdzv-conf heartbeat_timeout must be longer than heartbeat_interval");
  return conf;
}

ParsedCommandLine parse_command_line(const std::vector<std::string>& args, const Environment& env) {
  LaunchOptions o;
  RawOptions raw;
  CLI::App app{"Launch a distributed PyTorch / LibTorch job: one worker process per local "
               "rank, torchrun-compatible environment, fail-fast supervision.",
               "ddp-launch"};
  app.prefix_command();
  app.formatter(std::make_shared<UsageFormatter>());
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  define_flags(app, o, raw);
  app.footer("Every flag also reads PET_<NAME> from the environment (e.g. PET_NPROC_PER_NODE=4); "
             "the command line wins.\nExit status: the failed worker's code (128+N if killed by "
             "signal N), 130 on Ctrl-C, 120-127 for the launcher's own errors.");

  // PET_<NAME> defaults go first so that the command line (later) wins.
  std::vector<std::string> full;
  for (const CLI::Option* opt : app.get_options()) {
    const auto& names = opt->get_lnames();
    if (names.empty() || names[0] == "help" || names[0] == "version") continue;
    if (auto value = lookup(env, pet_name(names[0]))) full.push_back("--" + names[0] + "=" + *value);
  }
  if (auto tmpl = lookup(env, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")) raw.log_line_prefix_template = *tmpl;
  if (auto t = lookup(env, "TORCH_ELASTIC_SHUTDOWN_TIMEOUT")) raw.shutdown_timeout = *t;
  full.insert(full.end(), args.begin(), args.end());
  std::reverse(full.begin(), full.end());  // CLI11 consumes a reversed vector

  try {
    app.parse(full);
  } catch (const CLI::CallForHelp&) {
    return {std::nullopt, app.help(), exit_code::kSuccess};
  } catch (const CLI::ParseError& e) {
    usage_error(fmt::format("{}; see ddp-launch --help", e.what()));
  }
  if (raw.version) return {std::nullopt, std::string(kVersion) + "\n", exit_code::kSuccess};

  std::vector<std::string> rest = app.remaining();
  if (!rest.empty() && rest[0] == "--") rest.erase(rest.begin());
  if (rest.empty())
    usage_error("no program given; usage: ddp-launch [OPTIONS] PROGRAM [ARGS...] (see --help)");
  if (rest[0].size() > 1 && rest[0][0] == '-')
    usage_error(fmt::format("unknown option '{}'; see ddp-launch --help for the flags", rest[0]));
  o.program = rest[0];
  o.program_args.assign(rest.begin() + 1, rest.end());

  o.nproc = parse_nproc(raw.nproc);
  std::tie(o.nnodes_min, o.nnodes_max) = parse_nnodes(raw.nnodes);
  o.node_rank_given = app.count("--node-rank") > 0;
  bool master_addr_given = app.count("--master-addr") > 0;
  if (app.count("--nnodes") == 0 && !o.standalone) {
    if (auto job = slurm_job(env)) {  // under srun: one launcher per node
      o.nnodes_min = o.nnodes_max = job->nnodes;
      if (!o.node_rank_given) raw.node_rank = std::to_string(job->node_rank);
      o.node_rank_given = true;
      if (!master_addr_given) o.master_addr = job->first_host;
      master_addr_given = true;
    }
  }
  o.node_rank = parse_int_flag("--node-rank", raw.node_rank, 0, o.nnodes_max - 1,
                               fmt::format("between 0 and nnodes-1 ({})", o.nnodes_max - 1));
  if (!raw.master_port.empty())
    o.master_port = parse_int_flag("--master-port", raw.master_port, 0, 65535, "a port from 0 to 65535");
  o.max_restarts = parse_int_flag("--max-restarts", raw.max_restarts, 0, 1000000, "0 or more");
  if (!raw.shutdown_timeout.empty()) {
    try {
      size_t used = 0;
      o.shutdown_timeout_s = std::stod(raw.shutdown_timeout, &used);
      if (used != raw.shutdown_timeout.size() || !(o.shutdown_timeout_s >= 0)) throw std::invalid_argument("");
    } catch (const std::exception&) {
      usage_error(fmt::format("--shutdown-timeout must be a number of seconds >= 0, got '{}'",
                              raw.shutdown_timeout));
    }
  }
  o.signals_to_handle = parse_signal_list(raw.signals);
  o.redirects = parse_stream_selection("--redirects", raw.redirects);
  o.tee = parse_stream_selection("--tee", raw.tee);
  if (!raw.local_ranks_filter.empty()) o.local_ranks_filter = parse_rank_filter(raw.local_ranks_filter);
  if (!raw.devices.empty()) o.devices = parse_device_indices(raw.devices);
  if (!raw.log_line_prefix_template.empty() || lookup(env, "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"))
    o.log_line_prefix_template = raw.log_line_prefix_template;
  o.legacy_local_rank_arg = raw.legacy_local_rank_arg || !raw.use_env;
  o.rdzv = parse_rdzv_conf(raw.rdzv_conf, env);

  if (o.module && o.no_python)
    usage_error("-m/--module and --no-python contradict each other; a module needs python");
  if (o.rdzv_backend != "static" && o.rdzv_backend != "c10d")
    usage_error(fmt::format("--rdzv-backend '{}' is not supported; use static or c10d", o.rdzv_backend));
  if (o.standalone && o.nnodes_max > 1)
    usage_error("--standalone runs a single node; drop --nnodes or --standalone");
  if (o.standalone) o.rdzv_backend = "c10d";
  if (is_multi_node(o)) {
    if (o.rdzv_backend == "static") {
      if (o.nnodes_min != o.nnodes_max)
        usage_error("--nnodes MIN:MAX needs --rdzv-backend=c10d with --rdzv-endpoint; the static "
                    "backend takes a fixed --nnodes=N");
      if (!master_addr_given)
        usage_error("a multi-node job needs --master-addr: the address of node 0, reachable from "
                    "every node");
      if (!o.master_port || *o.master_port == 0) o.master_port = 29500;  // torchrun's default
    } else if (o.rdzv_endpoint.empty()) {
      usage_error("--rdzv-backend=c10d needs --rdzv-endpoint=HOST[:PORT], the same on every node");
    }
  }
  if (o.rdzv_id.empty()) usage_error("--rdzv-id must not be empty");
  return {std::move(o), "", exit_code::kSuccess};
}

}  // namespace ddp::launch
