// Checkpoints: model + optimizer + extra values in one file. save_checkpoint is collective:
// rank 0 writes atomically (temp file, fsync, rename, fsync dir) so a crash mid-save leaves
// the previous file intact; then all ranks meet at a barrier. load_checkpoint runs on every
// rank and maps tensors to that rank's device. Failures throw CheckpointError.
#pragma once

#include <map>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "ddp/errors.hpp"
#include "ddp/process_group.hpp"

namespace ddp {

// Extra values saved with a checkpoint: ints, doubles, strings, tensors (c10::IValue).
using CheckpointExtra = std::map<std::string, c10::IValue>;

// The optimizer's state of `param` (SGD's momentum buffer, Adam's moments: cast to the
// optimizer's ParamState type), or null before its first step; whatever key this LibTorch uses.
const torch::optim::OptimizerParamState* optimizer_param_state(const torch::optim::Optimizer& optimizer,
                                                               const torch::Tensor& param);

// Collective when the process group is initialized; works without one (single process).
// `optimizer` may be null. Throws CheckpointError if the file cannot be written.
void save_checkpoint(const std::string& path, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
                     const CheckpointExtra& extra = {});

// Loads into `model` (and `optimizer` if not null) and returns the extra values. Tensors are
// mapped to `device` (default: ddp::device()). Throws CheckpointError for a missing,
// truncated or foreign file, or one whose parameters do not match the model.
CheckpointExtra load_checkpoint(const std::string& path, torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                std::optional<torch::Device> device = std::nullopt);

// Overloads for module holders (torch::nn::Sequential, TORCH_MODULE types).
template <typename T>
void save_checkpoint(const std::string& path, const torch::nn::ModuleHolder<T>& model,
                     const torch::optim::Optimizer* optimizer, const CheckpointExtra& extra = {}) {
  save_checkpoint(path, *model, optimizer, extra);
}
template <typename T>
CheckpointExtra load_checkpoint(const std::string& path, torch::nn::ModuleHolder<T>& model,
                                torch::optim::Optimizer* optimizer,
                                std::optional<torch::Device> device = std::nullopt) {
  return load_checkpoint(path, *model, optimizer, device);
}

}  // namespace ddp
