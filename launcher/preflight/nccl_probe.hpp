// The pre-flight NCCL check's measurement (docs/preflight.md "NCCL"), run in a child process of
// its own (`ddp-launch __nccl-probe`, preflight/nccl_check.hpp): the launcher never holds a CUDA
// context or NCCL's buffers and threads (hundreds of MiB on every GPU for the whole job), and a
// hung initialization ends with the child. The node's first `gpus` GPUs (as CUDA_VISIBLE_DEVICES
// shows them) each hold `mib` MiB of floats and all-reduce them in place, two untimed rounds
// then kNcclTimedIterations timed ones; the sum is checked. Nothing is linked: the CUDA driver
// (libcuda.so.1, or DDP_LAUNCH_CUDA_LIBRARY) and NCCL (DDP_LAUNCH_NCCL_LIBRARY, which the
// launcher sets to a Python job's torch wheel NCCL, else libnccl.so.2 on the loader's path,
// else the CUDA toolkit's) are loaded at run time; a machine without them says so in
// NcclFigures::error with `loaded` false. Never throws.
#pragma once

#include <string>

#include "launcher/preflight/verdict.hpp"  // NcclFigures

namespace ddp::launch::preflight {

inline constexpr const char* kCudaLibraryEnvVar = "DDP_LAUNCH_CUDA_LIBRARY";
inline constexpr const char* kNcclLibraryEnvVar = "DDP_LAUNCH_NCCL_LIBRARY";
inline constexpr int kNcclTimedIterations = 10;

NcclFigures run_nccl_allreduce(int gpus, double mib);

// The child's one line of output, and its reading by the launcher (a line that is not the
// probe's output reads as an error naming it).
std::string nccl_figures_json(const NcclFigures& figures);
NcclFigures parse_nccl_figures(const std::string& line);

}  // namespace ddp::launch::preflight
