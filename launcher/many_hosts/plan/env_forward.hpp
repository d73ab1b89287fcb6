// Which of the launching machine's environment variables a many-host launch ships to every
// host's agent: names starting with a forwarded prefix (the defaults below, plus what
// --env-forward adds), never MASTER_* or PET_* (the launcher places each node itself) nor
// CUDA_VISIBLE_DEVICES / NVIDIA_VISIBLE_DEVICES (GPUs are chosen per host), then the KEY=VALUE lines of --env-file
// (which win). Pure; throws LaunchError(kUsage) with the file and line of a bad entry.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddp::launch::many_hosts::plan {

// NCCL_, CUDA_, TORCH_, PYTHON, OMP_, UCX_, HF_, WANDB_, OPENBLAS_, GOTO_NUM_THREADS, MKL_,
// KMP_, GOMP_, BLIS_, ONEDNN_, DNNL_, GLOO_, PYTORCH_, TORCHINDUCTOR_, CUBLAS_, CUBLASLT_,
// CUDNN_, NVIDIA_TF32_OVERRIDE
const std::vector<std::string>& default_forward_prefixes();

// --env-forward LIST: prefixes (or whole names) added to the defaults; `none` first drops
// the defaults (`none` alone: forward nothing by prefix). "" gives the defaults.
std::vector<std::string> forward_prefixes(const std::string& flag_value);

// KEY=VALUE lines (an optional `export `; `#` comment lines; blank lines; one pair of
// matching quotes around VALUE removed). source names the file in errors.
std::vector<std::pair<std::string, std::string>> parse_env_file(std::string_view text, const std::string& source);

// The variables to ship: env's names matching a prefix, then the file's pairs over them.
std::map<std::string, std::string> forwarded_environment(
    const std::map<std::string, std::string>& env, const std::vector<std::string>& prefixes,
    const std::vector<std::pair<std::string, std::string>>& env_file);

}  // namespace ddp::launch::many_hosts::plan
