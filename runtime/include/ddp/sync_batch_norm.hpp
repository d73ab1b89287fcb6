// SyncBatchNorm: batch normalisation whose training statistics cover the whole group's batch, as
// torch.nn.SyncBatchNorm (one module for 1d/2d/3d: any input of at least 2 dimensions, channels in
// dimension 1). Training forward all-gathers each rank's mean, invstd and count (uneven and empty
// batches included) and backward all-reduces two per-channel sums; eval mode with running stats
// communicates nothing. Collective in training: every member runs the same forwards/backwards.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "ddp/errors.hpp"
#include "ddp/process_group.hpp"

namespace ddp {

class SyncBatchNormImpl : public torch::nn::Cloneable<SyncBatchNormImpl> {
 public:
  // num_features, eps (1e-5), momentum (0.1; nullopt: cumulative average), affine, track_running_stats:
  // torch's BatchNormOptions. The parameters and buffers carry torch's names (weight, bias,
  // running_mean, running_var, num_batches_tracked), so state dicts match.
  explicit SyncBatchNormImpl(const torch::nn::BatchNormOptions& options, Group group = {});
  explicit SyncBatchNormImpl(int64_t num_features) : SyncBatchNormImpl(torch::nn::BatchNormOptions(num_features)) {}

  // input: [N, C, ...] with C = num_features; N may differ across ranks and be 0 on some.
  // Throws ConfigError for fewer than 2 dimensions or the wrong channel count.
  torch::Tensor forward(const torch::Tensor& input);

  void reset() override;
  void reset_running_stats();
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  const Group& group() const { return group_; }

  torch::nn::BatchNormOptions options;
  torch::Tensor weight, bias;                                    // undefined unless affine
  torch::Tensor running_mean, running_var, num_batches_tracked;  // undefined unless track_running_stats

 private:
  friend std::shared_ptr<torch::nn::Module> convert_sync_batchnorm(std::shared_ptr<torch::nn::Module>, const Group&);
  // convert_sync_batchnorm: registers the BatchNorm's own tensors (shared, as torch's convert does).
  struct Adopted {
    torch::Tensor weight, bias, running_mean, running_var, num_batches_tracked;
  };
  SyncBatchNormImpl(const torch::nn::BatchNormOptions& options, Group group, const Adopted& tensors);
  void register_tensors(const Adopted& tensors);

  Group group_;
};
TORCH_MODULE(SyncBatchNorm);

// Replaces every BatchNorm1d/2d/3d in the tree under `module` by a SyncBatchNorm over `group` with
// the same options, training mode, and the same parameter and buffer tensors (shared, not copied:
// an optimizer built before still updates them), as
// torch.nn.SyncBatchNorm.convert_sync_batchnorm. Returns the new root (a new module when `module`
// is itself a BatchNorm, else `module`). Children of Sequential and ModuleList are swapped in place;
// a BatchNorm that something else still holds (a typed holder member such as `BatchNorm2d bn;`
// whose forward would keep calling the old module) makes it throw ConfigError naming it, before
// anything is changed.
std::shared_ptr<torch::nn::Module> convert_sync_batchnorm(std::shared_ptr<torch::nn::Module> module,
                                                          const Group& group = {});

}  // namespace ddp
