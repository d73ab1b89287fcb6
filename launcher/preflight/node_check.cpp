#include "launcher/preflight/node_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/preflight/nccl_check.hpp"
#include "launcher/os/this_process.hpp"
#include "launcher/preflight/measure.hpp"
#include "launcher/snapshot/snapshot_regions.hpp"
#include "launcher/warm/standby_plan.hpp"

namespace ddp::launch::preflight {

std::vector<std::pair<std::string, std::string>> preflight_folders(const cli::Environment& env,
                                                                   const std::string& run_dir,
                                                                   const std::string& persist_dir) {
  const auto shm = cli::lookup(env, snapshot::kSnapshotDirEnvVar);
  std::vector<std::pair<std::string, std::string>> folders{
      {"snapshot regions", shm && !shm->empty() ? *shm : "/dev/shm"}, {"run directory", run_dir}};
  if (!persist_dir.empty()) folders.emplace_back("--snapshot-persist-dir", persist_dir);
  return folders;
}

namespace {

// The job's GPUs as CUDA_VISIBLE_DEVICES names them: the list its workers were given, else the
// first `gpus` of this process's CUDA_VISIBLE_DEVICES, else 0 .. gpus-1.
std::vector<std::string> job_gpu_ids(const NodeNeeds& needs) {
  const std::optional<std::string> visible = os::env_value("CUDA_VISIBLE_DEVICES");
  std::vector<std::string> ids =
      split(needs.gpu_list.empty() ? visible.value_or("") : needs.gpu_list, ',', EmptyItems::kSkip);
  if (needs.gpu_list.empty() && !visible)
    for (int i = 0; i < needs.gpus; ++i) ids.push_back(std::to_string(i));
  if (ids.size() > static_cast<size_t>(needs.gpus)) ids.resize(static_cast<size_t>(needs.gpus));
  return ids;
}

}  // namespace

NodeNeeds job_needs(const worker::DevicePlan& devices, int workers,
                    std::vector<std::pair<std::string, std::string>> folders, const std::string& executable) {
  NodeNeeds needs{workers, devices.uses_gpus ? workers : 0, std::move(folders), "", ""};
  if (needs.gpus > 0 && warm::is_python_executable(executable)) needs.nccl_library = wheel_nccl(executable);
  std::vector<std::string> given;  // every GPU some worker was given, in order
  for (const auto& d : devices.visible_devices)
    for (const auto& id : split(d.value_or(""), ',', EmptyItems::kSkip))
      if (std::find(given.begin(), given.end(), id) == given.end()) given.push_back(id);
  if (needs.gpus > 0 && !given.empty()) needs.gpu_list = fmt::format("{}", fmt::join(given, ","));
  return needs;
}

NodeCheck check_node(os::ChildRegistry& children, const cli::PreflightConf& conf, const NodeNeeds& needs,
                     const PreflightOutputs& to) {
  preflight::Figures figures = preflight::measure({conf.cpu_ms, needs.workers, needs.folders, needs.gpus});
  figures.gpu_ids = job_gpu_ids(needs);
  if (needs.gpus > 0 && conf.nccl_mib > 0)
    figures.nccl = measure_nccl(children, needs.gpus, conf.nccl_mib, needs.gpu_list, needs.nccl_library);
  NodeCheck out{preflight::judge(figures, conf), "", preflight::median_gflops(figures),
                figures.nccl && figures.nccl->error.empty() ? figures.nccl->busbw_gbps : 0};
  out.failed = preflight::failed_summary(out.findings);
  std::map<std::string, preflight::Level> worst;  // per check: the disk check has a finding per folder
  for (const auto& f : out.findings) {
    worst[f.check] = std::max(worst[f.check], f.level);
    if (to.events)
      to.events->write("preflight", {{"check", f.check},
                                     {"level", preflight::level_name(f.level)},
                                     {"figure", f.figure},
                                     {"threshold", f.threshold}});
    if (to.say && f.level != preflight::Level::kPass)
      console::launcher_notice(
          fmt::format("preflight: {} {}: {} ({})", preflight::level_name(f.level), f.check, f.figure, f.threshold));
  }
  if (to.board)
    for (const auto& [check, level] : worst) to.board->preflight[check] = preflight::level_name(level);
  return out;
}

void run_preflight(os::ChildRegistry& children, const cli::PreflightConf& conf, const NodeNeeds& needs,
                   const PreflightOutputs& out) {
  const NodeCheck check = check_node(children, conf, needs, out);
  if (!check.failed.empty())
    throw LaunchError(exit_code::kPreflightFailed,
                      fmt::format("pre-flight check failed on this node, no worker started: {}; fix the node, or "
                                  "change the threshold with --preflight-conf (docs/preflight.md)",
                                  check.failed));
}

}  // namespace ddp::launch::preflight
