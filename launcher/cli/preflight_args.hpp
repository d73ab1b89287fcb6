// `ddp-launch preflight [--nproc-per-node N] [--gpus] [--preflight-conf K=V,...] [--log-dir DIR]
// [--snapshot-persist-dir DIR]`: its arguments, read by CLI11 (what the command does:
// preflight/node_check.hpp, the checks --preflight runs before a job's workers). Pure; errors
// throw LaunchError(kUsage) naming what is wrong, with the usage line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/preflight_conf.hpp"

namespace ddp::launch::cli {

inline constexpr const char* kPreflightUsage =
    "usage: ddp-launch preflight [--nproc-per-node N] [--gpus] [--preflight-conf K=V,...] [--log-dir DIR] "
    "[--snapshot-persist-dir DIR]";

struct PreflightArgs {
  int workers = 1;                   // --nproc-per-node: the snapshot regions /dev/shm must hold
  bool gpus = false;                 // --gpus: the workers use a GPU each (the GPU check runs)
  PreflightConf conf;                // --preflight-conf
  std::string log_dir;               // --log-dir: where the job's run directory would go ("": TMPDIR or /tmp)
  std::string snapshot_persist_dir;  // --snapshot-persist-dir ("": not checked)
};

// args: what follows "preflight". nullopt: -h/--help (print kPreflightUsage, exit 0).
std::optional<PreflightArgs> parse_preflight_args(const std::vector<std::string>& args);

}  // namespace ddp::launch::cli
