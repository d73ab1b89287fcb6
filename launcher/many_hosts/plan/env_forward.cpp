#include "launcher/many_hosts/plan/env_forward.hpp"

#include <cctype>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"

namespace ddp::launch::many_hosts::plan {
namespace {

bool valid_name(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Set by the launcher on each host; shipping the launching machine's would misplace it.
bool never_forwarded(std::string_view name) {
  return name.rfind("MASTER_", 0) == 0 || name.rfind("PET_", 0) == 0 || name == "CUDA_VISIBLE_DEVICES" ||
         name == "NVIDIA_VISIBLE_DEVICES";
}

bool starts_with_any(const std::string& name, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes)
    if (name.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

const std::vector<std::string>& default_forward_prefixes() {
  // What changes the numerics or the threading of a worker, besides the job's own tools:
  // OpenBLAS (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE pick other kernels), MKL (MKL_CBWR), Intel
  // and GNU OpenMP (KMP_, GOMP_), BLIS, oneDNN (ONEDNN_/DNNL_MAX_CPU_ISA), gloo, cuBLAS and
  // cuDNN (CUBLAS_WORKSPACE_CONFIG), TF32 (NVIDIA_TF32_OVERRIDE), PyTorch's other names.
  static const std::vector<std::string> kDefault{"NCCL_",
                                                 "CUDA_",
                                                 "TORCH_",
                                                 "PYTHON",
                                                 "OMP_",
                                                 "UCX_",
                                                 "HF_",
                                                 "WANDB_",
                                                 "OPENBLAS_",
                                                 "GOTO_NUM_THREADS",
                                                 "MKL_",
                                                 "KMP_",
                                                 "GOMP_",
                                                 "BLIS_",
                                                 "ONEDNN_",
                                                 "DNNL_",
                                                 "GLOO_",
                                                 "PYTORCH_",
                                                 "TORCHINDUCTOR_",
                                                 "CUBLAS_",
                                                 "CUBLASLT_",
                                                 "CUDNN_",
                                                 "NVIDIA_TF32_OVERRIDE"};
  return kDefault;
}

std::vector<std::string> forward_prefixes(const std::string& flag_value) {
  std::vector<std::string> prefixes = default_forward_prefixes();
  bool first = true;
  for (const std::string& raw : split(flag_value, ',', EmptyItems::kSkip)) {
    const std::string item = trim(raw);
    if (first && item == "none") {
      prefixes.clear();
    } else if (!valid_name(item)) {
      throw LaunchError(exit_code::kUsage,
                        fmt::format("--env-forward '{}': '{}' is not a variable name or prefix; give names such as "
                                    "MY_APP_,LD_LIBRARY_PATH (letters, digits, '_'), or none first to drop the "
                                    "defaults",
                                    flag_value, item));
    } else if (item == "MASTER_" || item == "PET_" || never_forwarded(item)) {
      throw LaunchError(exit_code::kUsage,
                        fmt::format("--env-forward '{}': {} is never forwarded: the launcher sets the placement "
                                    "and GPUs of each host itself",
                                    flag_value, item));
    } else {
      prefixes.push_back(item);
    }
    first = false;
  }
  return prefixes;
}

std::vector<std::pair<std::string, std::string>> parse_env_file(std::string_view text, const std::string& source) {
  std::vector<std::pair<std::string, std::string>> out;
  int number = 0;
  for (const std::string& raw : split(text, '\n')) {
    ++number;
    std::string line = raw;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("export ", 0) == 0) line = trim(line.substr(7));
    auto kv = split_once(line, '=');
    const std::string where = fmt::format("--env-file {}:{}", source, number);
    if (!kv || !valid_name(trim(kv->first)))
      throw LaunchError(exit_code::kUsage,
                        fmt::format("{}: '{}' is not KEY=VALUE; write one NAME=VALUE per line ('#' starts a comment "
                                    "line)",
                                    where, line));
    std::string key = trim(kv->first), value = kv->second;
    if (never_forwarded(key))
      throw LaunchError(exit_code::kUsage,
                        fmt::format("{}: {} cannot be set this way: the launcher sets the placement and GPUs of "
                                    "each host itself",
                                    where, key));
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') && value.back() == value.front())
      value = value.substr(1, value.size() - 2);
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

std::map<std::string, std::string> forwarded_environment(
    const std::map<std::string, std::string>& env, const std::vector<std::string>& prefixes,
    const std::vector<std::pair<std::string, std::string>>& env_file) {
  std::map<std::string, std::string> out;
  for (const auto& [name, value] : env)
    if (!never_forwarded(name) && starts_with_any(name, prefixes)) out[name] = value;
  for (const auto& [name, value] : env_file) out[name] = value;
  return out;
}

}  // namespace ddp::launch::many_hosts::plan
