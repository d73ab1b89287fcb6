// DistributedSampler: the indices of Python torch's torch.utils.data.distributed.DistributedSampler
// (1.13 and 2.x: the same algorithm) for the same size, replicas, rank, seed, epoch, shuffle and
// drop_last — a torch CPU generator seeded with seed + epoch, randperm, padding by repetition or
// truncation, every num_replicas-th index from rank. A LibTorch data-loader sampler (copyable; the
// loader takes it by value). Not thread-safe; no communication.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "ddp/errors.hpp"

namespace ddp {

struct DistributedSamplerOptions {
  bool shuffle = true;     // a fresh permutation per epoch (seed + epoch); false: 0, 1, 2, ...
  uint64_t seed = 0;       // the same on every rank, as in Python
  bool drop_last = false;  // false: pad to a multiple of num_replicas; true: drop the tail
};

// This epoch's indices for one rank, exactly as Python's DistributedSampler.__iter__ yields them.
// Throws ConfigError for num_replicas 0 or rank outside [0, num_replicas - 1].
std::vector<size_t> distributed_sampler_indices(size_t dataset_size, size_t num_replicas, size_t rank, size_t epoch,
                                                const DistributedSamplerOptions& options = {});

class DistributedSampler : public torch::data::samplers::Sampler<> {
 public:
  // Throws ConfigError for num_replicas 0 or rank outside [0, num_replicas - 1].
  DistributedSampler(size_t dataset_size, size_t num_replicas, size_t rank, DistributedSamplerOptions options = {});

  // As Python: the next reset() (a data loader's start, or yours) shuffles for this epoch.
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }
  // Python's len(sampler) and total_size.
  size_t num_samples() const { return num_samples_; }
  size_t total_size() const { return num_samples_ * num_replicas_; }
  // This epoch's indices for this rank (what one pass yields).
  std::vector<size_t> indices() const;

  // Rebuilds this epoch's indices (new_size: a new dataset size) and starts from the first.
  void reset(torch::optional<size_t> new_size = torch::nullopt) override;
  // Up to batch_size of the next indices; nullopt at the end of the pass (torch::optional: c10::optional in 1.13).
  torch::optional<std::vector<size_t>> next(size_t batch_size) override;
  // The epoch and the position within it (a resumed loader continues where it was).
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

 private:
  size_t dataset_size_, num_replicas_, rank_;
  DistributedSamplerOptions options_;
  size_t num_samples_ = 0;
  size_t epoch_ = 0;
  std::vector<size_t> indices_;
  size_t next_ = 0;
};

}  // namespace ddp
