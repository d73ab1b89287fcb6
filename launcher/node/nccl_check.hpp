// The pre-flight NCCL check from the launcher's side: runs this executable's hidden
// `__nccl-probe GPUS MIB` (preflight/nccl_probe.hpp) as a child with this process's
// environment (CUDA_VISIBLE_DEVICES, DDP_LAUNCH_NCCL_LIBRARY, NCCL_* reach it) and reads its
// figures. A probe that crashes, prints something else or outlives kNcclProbeLimit (killed)
// reads as a failed all-reduce naming that. Blocks until the probe ends; never throws.
#pragma once

#include <chrono>
#include <string>

#include "launcher/preflight/verdict.hpp"

namespace ddp::launch::node {

inline constexpr std::chrono::seconds kNcclProbeLimit{30};

// gpu_list: the probe's CUDA_VISIBLE_DEVICES ("": this process's).
preflight::NcclFigures measure_nccl(int gpus, double mib, const std::string& gpu_list);

}  // namespace ddp::launch::node
