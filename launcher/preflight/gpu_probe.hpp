// The pre-flight GPU check's I/O (docs/preflight.md "GPUs"): NVML, loaded at run time
// (libnvidia-ml.so.1 from the driver; DDP_LAUNCH_NVML_LIBRARY names another file), asked for
// every GPU it sees (its name and UUID): uncorrected ECC errors since the driver loaded,
// retired pages waiting for a reset, the clock event (throttle) reasons, the SM clock and its
// maximum. Nothing is linked: a machine without the driver says so in `error`. Never throws.
#pragma once

#include <string>

#include "launcher/preflight/verdict.hpp"  // GpuFigures

namespace ddp::launch::preflight {

inline constexpr const char* kNvmlLibraryEnvVar = "DDP_LAUNCH_NVML_LIBRARY";

GpuFigures probe_gpus();

}  // namespace ddp::launch::preflight
