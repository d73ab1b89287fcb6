// The pre-flight NCCL check from the launcher's side: runs this executable's hidden
// `__nccl-probe GPUS MIB` (preflight/nccl_probe.hpp) as a child with this process's
// environment (CUDA_VISIBLE_DEVICES, DDP_LAUNCH_NCCL_LIBRARY, NCCL_* reach it) and reads its
// figures. A probe that crashes, prints something else or outlives kNcclProbeLimit (killed)
// reads as a failed all-reduce naming that. Blocks until the probe ends; never throws.
#pragma once

#include <chrono>
#include <string>

#include "launcher/os/child_registry.hpp"
#include "launcher/preflight/verdict.hpp"

namespace ddp::launch::preflight {

inline constexpr std::chrono::seconds kNcclProbeLimit{30};

// children: the registry the probe starts through. gpu_list: the probe's CUDA_VISIBLE_DEVICES
// ("": this process's); nccl_library: the NCCL the job uses when known (wheel_nccl), loaded
// unless DDP_LAUNCH_NCCL_LIBRARY names another.
preflight::NcclFigures measure_nccl(os::ChildRegistry& children, int gpus, double mib, const std::string& gpu_list,
                                    const std::string& nccl_library);

// The NCCL of the torch wheel in the Python environment of `python` (an interpreter's path:
// PREFIX/bin/python3 -> PREFIX/lib/python3.*/{site,dist}-packages/nvidia/nccl/lib/libnccl.so.2),
// "" when there is none. Reads folders only.
std::string wheel_nccl(const std::string& python);

}  // namespace ddp::launch::preflight
