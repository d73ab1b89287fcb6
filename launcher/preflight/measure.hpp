// What this node measures for its pre-flight verdict (verdict.hpp): every core it may run on
// multiplying 64x64 float matrices at once for cpu_ms (a thread pinned to each), MemAvailable,
// and for each folder the job will write its free space and whether a file can be created,
// written, synced and removed there; when the job uses GPUs, what NVML says of them
// (gpu_probe.hpp). Blocks for about cpu_ms; never throws.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launcher/preflight/verdict.hpp"

namespace ddp::launch::preflight {

struct MeasureSpec {
  double cpu_ms = 200;
  int workers = 1;
  std::vector<std::pair<std::string, std::string>> folders;  // role, path (role "snapshot regions" first)
  int gpus_needed = 0;                                       // > 0: NVML is asked about the GPUs too
};

Figures measure(const MeasureSpec& spec);

}  // namespace ddp::launch::preflight
