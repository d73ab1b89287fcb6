

#include "contract/progress_file.hpp"
#include "contract/snapshot_region.hpp"
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/node/worker_launches.hpp"
#include "launcher/worker/output.hpp"
#include "launcher/worker/python_hooks.hpp"
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <unistd.h>

namespace ddp::launch::node {
namespace {

// Console and log file for each stream of one worker; dir is its log directory ("": none).
void route_output(const OutputSpec& output, const worker::RunLayout& layout, const std::string& dir,
                  worker::WorkerLaunch& w) {
  const int redirect = output.redirects.for_rank(w.local_rank);
  const int tee = output.tee.for_rank(w.local_rank);
  const bool shown = !output.local_ranks_filter || output.local_ranks_filter->count(w.local_rank) > 0;
  auto route = [&](int bit, bool& to_console, std::string& log, const char* name) {
    to_console = shown && (!(redirect & bit) || (tee & bit));
    if (!dir.empty() && (layout.keeps_all_logs() || ((redirect | tee) & bit))) log = dir + "/" + name;
  };
  route(cli::kStdout, w.stdout_to_console, w.stdout_log, "stdout.log");
  route(cli::kStderr, w.stderr_to_console, w.stderr_log, "stderr.log");
}

// --duplicate-*-filters: the attempt's filtered_NAME.log (created even if no line matches,
// as torchrun does), or null without filters or files.
std::shared_ptr<worker::DuplicateLog> duplicate_log(const std::optional<std::vector<std::string>>& filters,
                                                    const std::string& attempt_dir, const char* name) {
  if (!filters || attempt_dir.empty()) return nullptr;
  return std::make_shared<worker::DuplicateLog>(*filters, worker::open_log_file(attempt_dir + "/" + name));
}

// torchrun copies the lines of the tee'd streams of the ranks on the console.
void attach_duplicates(const OutputSpec& output, const std::shared_ptr<worker::DuplicateLog>& out,
                       const std::shared_ptr<worker::DuplicateLog>& err, worker::WorkerLaunch& w) {
  const int tee = output.tee.for_rank(w.local_rank);
  const bool shown = !output.local_ranks_filter || output.local_ranks_filter->count(w.local_rank) > 0;
  if (shown && (tee & cli::kStdout)) w.stdout_duplicate = out;
  if (shown && (tee & cli::kStderr)) w.stderr_duplicate = err;
}

// The progress record (hang detection) and where a hang's stacks go; Python workers also
// get PYTHONFAULTHANDLER (unless set) so that SIGABRT prints their tracebacks.
void add_progress_feed(const cli::Environment& env, const std::string& dir, worker::WorkerLaunch& w) {
  if (dir.empty()) return;  // --log-dir /dev/null: no files, no hang detection
  w.progress_file = dir + "/progress";
  w.stacks_file = dir + "/stacks.txt";
  if (const int err = ddp::progress::create_record_file(w.progress_file))
    throw LaunchError(exit_code::kIoError, fmt::format("cannot create the progress file {}: {}; check free space "
                                                       "and permissions there",
                                                       w.progress_file, std::strerror(err)));
  ::unlink(w.stacks_file.c_str());
  w.spawn.env.push_back(std::string(ddp::progress::kEnvVar) + "=" + w.progress_file);
  w.spawn.env.push_back("DDP_LAUNCH_STACKS_FILE=" + w.stacks_file);
  w.python = std::filesystem::path(w.spawn.executable).filename().string().rfind("python", 0) == 0;
  if (w.python && !cli::lookup(env, "PYTHONFAULTHANDLER")) w.spawn.env.push_back("PYTHONFAULTHANDLER=1");
}

}  // namespace

std::vector<worker::WorkerLaunch> prepare_attempt(const JobConfig& job, const cli::Environment& env,
                                                  const worker::GroupPlan& plan, const worker::RunLayout& layout,
                                                  snapshot::SnapshotRegions* snapshots) {
  const worker::DevicePlan& devices = job.devices;
  std::vector<worker::WorkerLaunch> out;
  const std::string first_dir = layout.worker_dir(plan.restart_count, 0);
  const std::string attempt_dir = first_dir.empty() ? "" : std::filesystem::path(first_dir).parent_path().string();
  const auto stdout_duplicate = duplicate_log(job.output.duplicate_stdout_filters, attempt_dir, "filtered_stdout.log");
  const std::string hostname =
      job.output.prefix_template.find("${hostname}") != std::string::npos ? os::host_name() : "";
  const auto stderr_duplicate = duplicate_log(job.output.duplicate_stderr_filters, attempt_dir, "filtered_stderr.log");
  for (int local = 0; local < plan.local_world_size; ++local) {
    worker::WorkerLaunch w;
    w.local_rank = local;
    w.rank = worker::global_rank(plan, local);
    const std::string dir = layout.worker_dir(plan.restart_count, local);
    w.error_file = dir.empty() ? "" : dir + "/error.json";
    if (!w.error_file.empty()) ::unlink(w.error_file.c_str());
    worker::WorkerSlot slot{local, w.error_file, devices.visible_devices[local], devices.local_rank_zero,
                            worker::python_hooks_dir(env)};
    w.spawn.executable = job.command.executable;
    w.spawn.argv = job.command.argv_for(local);
    w.spawn.env = cli::environment_entries(worker::worker_environment(env, plan, slot));
    w.prefix = worker::expand_prefix_template(job.output.prefix_template, w.rank, local, plan.role, hostname);
    route_output(job.output, layout, dir, w);
    attach_duplicates(job.output, stdout_duplicate, stderr_duplicate, w);
    if (static_cast<size_t>(local) < job.worker_cpus.size()) w.spawn.cpu_affinity = job.worker_cpus[local];
    add_progress_feed(env, dir, w);
    if (snapshots)
      if (const std::string region = snapshots->path_for(local); !region.empty())
        w.spawn.env.push_back(std::string(ddp::snapshot::kEnvVar) + "=" + region);
    if (job.output.stdin_rank == w.rank) w.spawn.stdin_fd = STDIN_FILENO;  // for pdb & input()
    out.push_back(std::move(w));
  }
  return out;
}

void keep_reported_error_file(worker::RunLayout& layout, const report::WorkerOutcome& root) {
  const bool hang = is_hang(root.failure);
  if ((!root.error && !hang) || !layout.temporary()) return;
  layout.keep();
  console::launcher_notice(fmt::format("kept the run directory {}: it holds the {} the report names", layout.run_dir(),
                                       hang ? "stacks files" : "error files"));
}

void notice_omp_threads(const cli::Environment& env, int nproc) {
  if (!cli::lookup(env, "OMP_NUM_THREADS") && nproc > 1)
    console::launcher_notice(
        "OMP_NUM_THREADS is not set: each worker gets OMP_NUM_THREADS=1 so that workers "
        "do not oversubscribe the CPUs; set it yourself to tune");
}

}  // namespace ddp::launch::node
