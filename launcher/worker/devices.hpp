// GPU discovery and selection. count_cuda_devices() loads the CUDA driver with dlopen
// (never linked) and honours CUDA_VISIBLE_DEVICES; plan_devices() is pure: from the
// visible devices and a DeviceSpec it decides how many workers run and what each one's
// CUDA_VISIBLE_DEVICES is. Errors throw LaunchError(kBadDevices).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/option_parsers.hpp"  // NprocSpec

namespace ddp::launch::worker {

// Number of CUDA devices the driver sees (after CUDA_VISIBLE_DEVICES); nullopt when no
// driver can be loaded. Costs a driver initialisation: call only when GPUs matter.
std::optional<int> count_cuda_devices();

// CUDA_VISIBLE_DEVICES split on commas ("" -> no devices).
std::vector<std::string> split_visible_devices(const std::string& value);

struct DeviceInputs {
  std::optional<std::string> cuda_visible_devices;   // the launcher's own, if set
  std::function<std::optional<int>()> driver_count;  // called only if needed
  int cpu_count = 1;
};

// What the command line asks for (--nproc-per-node, --devices, --virtual-local-rank).
struct DeviceSpec {
  cli::NprocSpec nproc;
  std::optional<std::vector<int>> devices;  // indices into the visible devices
  bool virtual_local_rank = false;
};

struct DevicePlan {
  int nproc = 1;
  bool uses_gpus = false;
  // Per local rank: the CUDA_VISIBLE_DEVICES to set, or nullopt to pass the launcher's through.
  std::vector<std::optional<std::string>> visible_devices;
  bool local_rank_zero = false;  // --virtual-local-rank: every worker gets LOCAL_RANK=0
};

DevicePlan plan_devices(const DeviceSpec& spec, const DeviceInputs& inputs);

}  // namespace ddp::launch::worker
