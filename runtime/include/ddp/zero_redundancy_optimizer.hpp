// ZeroRedundancyOptimizer (ZeRO stage 1, PyTorch's torch.distributed.optim class): wraps a
// LibTorch optimizer built by a factory, shards its state across a group by parameter (PyTorch's
// sorted-greedy partition), steps only this rank's shard and broadcasts each owner's updated
// parameters in flat buckets. Construction, step() and consolidate_state_dict() are collective
// and block; load() and zero_grad() are local. One thread at a time, like any optimizer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "ddp/errors.hpp"
#include "ddp/process_group.hpp"

namespace ddp {

// Builds the wrapped optimizer over the parameters it is given (a shard, or all of them for the
// consolidated state). Must return the same optimizer type with the same options every call.
using OptimizerFactory = std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor> params)>;

// optimizer_factory<torch::optim::Adam>(torch::optim::AdamOptions(1e-3)).
template <typename OptimizerT, typename OptionsT>
OptimizerFactory optimizer_factory(OptionsT options) {
  return [options](std::vector<torch::Tensor> params) -> std::unique_ptr<torch::optim::Optimizer> {
    return std::make_unique<OptimizerT>(std::move(params), options);
  };
}

struct ZeroOptions {
  // Group to shard over (default: world).
  Group group;
  // Cap of one flat broadcast bucket (one owner's parameters of one dtype and device) in MiB;
  // a parameter larger than the cap is broadcast alone. Must be the same on every rank.
  double bucket_cap_mb = 25.0;
};

// Owner (group rank) of each parameter, by PyTorch 1.13's ZeroRedundancyOptimizer partition:
// parameters sorted by element count, largest first (ties in list order), each given to the rank
// with the fewest elements so far (the lowest such rank).
std::vector<int> zero_partition(const std::vector<int64_t>& numels, int world_size);

class ZeroRedundancyOptimizer : public torch::optim::Optimizer {
 public:
  // Collective over options.group. `params`: the same list on every rank (checked: count, shapes
  // and dtypes, else DdpError on every rank). This rank's shard, in partition order (largest
  // first), goes to factory(). Throws ConfigError if this process is not in the group.
  ZeroRedundancyOptimizer(std::vector<torch::Tensor> params, OptimizerFactory factory, ZeroOptions options = {});
  ~ZeroRedundancyOptimizer() override;

  // Copies param_groups()[0]'s options (lr, ... : schedulers may change them here) into the
  // local optimizer, steps it over this rank's shard, then broadcasts every owner's parameters.
  // Collective. Returns the local optimizer's loss (closure evaluated once on every rank).
  torch::Tensor step(LossClosure closure = nullptr) override;

  // Collective: the full state of every shard, as one unsharded optimizer of the wrapped type
  // over `params` would hold it, is kept on global rank `to_rank` (replacing an earlier one)
  // for save(). Throws ConfigError if to_rank is no member, DdpError if the ranks disagree on it.
  void consolidate_state_dict(int to_rank = 0);
  bool has_consolidated_state() const { return consolidated_ != nullptr; }
  // The consolidated state (on the rank consolidated to) in the wrapped optimizer's own archive
  // format: torch::save(zero, path), or save_checkpoint(path, model, &zero) after
  // consolidate_state_dict(0); loadable into an unsharded optimizer of the same type. Throws
  // CheckpointError on a rank holding no consolidated state.
  void save(torch::serialize::OutputArchive& archive) const override;
  // Local, on every rank: a full state (from save() or from an unsharded optimizer of the same
  // type over the same parameters); each rank keeps its shard's. Like LibTorch's own load, the
  // options are not taken from it. A state of another optimizer type or other parameters
  // (count, shapes) throws CheckpointError and loads nothing.
  void load(torch::serialize::InputArchive& archive) override;

  // This rank's optimizer (over its shard). Change options through param_groups() instead.
  torch::optim::Optimizer& local_optimizer() { return *local_; }
  const torch::optim::Optimizer& local_optimizer() const { return *local_; }
  // Group rank owning parameter `index` (position in `params`); this rank's parameter indices.
  int owner(size_t index) const { return owners_.at(index); }
  const std::vector<size_t>& local_indices() const { return shards_.at(static_cast<size_t>(group_rank_)); }
  // Number of broadcasts one step issues.
  size_t bucket_count() const { return buckets_.size(); }

 private:
  struct Bucket {
    int root = 0;                 // global rank of the owner
    std::vector<size_t> indices;  // parameter indices, in the owner's shard order
  };
  std::vector<torch::Tensor> shard_params(int group_rank) const;
  void broadcast_parameters();

  OptimizerFactory factory_;
  ZeroOptions options_;
  int group_rank_ = -1;
  std::vector<torch::Tensor> params_;        // all of them, in the caller's order
  std::vector<int> owners_;                  // group rank per parameter
  std::vector<std::vector<size_t>> shards_;  // per group rank: indices, in partition order
  std::vector<Bucket> buckets_;
  std::unique_ptr<torch::optim::Optimizer> local_;
  std::unique_ptr<torch::optim::Optimizer> consolidated_;  // the rank consolidated to only
};

// Bytes held by the tensors of an optimizer's state (Adam, AdamW, SGD, Adagrad, RMSprop; a
// ZeroRedundancyOptimizer: its local shard's). Throws ConfigError for another state type.
int64_t optimizer_state_bytes(const torch::optim::Optimizer& optimizer);

}  // namespace ddp
