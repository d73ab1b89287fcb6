// Python's DistributedSampler in C++: see distributed_sampler.hpp. torch.Generator().manual_seed(s)
// is a CPUGeneratorImpl whose mt19937 starts from s; randperm draws from it with the same CPU
// kernel in LibTorch and in Python, so the permutations are bit-identical.
#include "ddp/distributed_sampler.hpp"

#include <ATen/CPUGeneratorImpl.h>

#include <string>

namespace ddp {
namespace {

void check_rank(size_t num_replicas, size_t rank) {
  if (num_replicas == 0) throw ConfigError("DistributedSampler: num_replicas must be at least 1, got 0");
  if (rank >= num_replicas)
    throw ConfigError("DistributedSampler: invalid rank " + std::to_string(rank) + ", rank should be in [0, " +
                      std::to_string(num_replicas - 1) + "] for " + std::to_string(num_replicas) + " replicas");
}

// Python: math.ceil((n - r) / r) with drop_last and a remainder (= n // r), else math.ceil(n / r).
size_t samples_per_rank(size_t n, size_t replicas, bool drop_last) {
  return drop_last ? n / replicas : (n + replicas - 1) / replicas;
}

}  // namespace

std::vector<size_t> distributed_sampler_indices(size_t dataset_size, size_t num_replicas, size_t rank, size_t epoch,
                                                const DistributedSamplerOptions& options) {
  check_rank(num_replicas, rank);
  std::vector<size_t> all(dataset_size);
  if (options.shuffle) {
    auto generator = at::make_generator<at::CPUGeneratorImpl>(options.seed + static_cast<uint64_t>(epoch));
    const auto permutation = torch::randperm(static_cast<int64_t>(dataset_size), generator, torch::kLong);
    const int64_t* p = permutation.data_ptr<int64_t>();
    for (size_t i = 0; i < dataset_size; ++i) all[i] = static_cast<size_t>(p[i]);
  } else {
    for (size_t i = 0; i < dataset_size; ++i) all[i] = i;
  }
  const size_t total = samples_per_rank(dataset_size, num_replicas, options.drop_last) * num_replicas;
  if (total > dataset_size && dataset_size > 0) {
    all.reserve(total);  // pad by repeating the permutation from its start, as often as needed
    for (size_t i = dataset_size; i < total; ++i) all.push_back(all[i % dataset_size]);
  }
  all.resize(std::min(total, all.size()));
  std::vector<size_t> mine;
  mine.reserve(total / num_replicas);
  for (size_t i = rank; i < total; i += num_replicas) mine.push_back(all[i]);
  return mine;
}

DistributedSampler::DistributedSampler(size_t dataset_size, size_t num_replicas, size_t rank,
                                       DistributedSamplerOptions options)
    : dataset_size_(dataset_size), num_replicas_(num_replicas), rank_(rank), options_(options) {
  check_rank(num_replicas, rank);
  num_samples_ = samples_per_rank(dataset_size, num_replicas, options.drop_last);
  reset();
}

std::vector<size_t> DistributedSampler::indices() const {
  return distributed_sampler_indices(dataset_size_, num_replicas_, rank_, epoch_, options_);
}

void DistributedSampler::reset(torch::optional<size_t> new_size) {
  if (new_size) {
    dataset_size_ = *new_size;
    num_samples_ = samples_per_rank(dataset_size_, num_replicas_, options_.drop_last);
  }
  indices_ = indices();
  next_ = 0;
}

torch::optional<std::vector<size_t>> DistributedSampler::next(size_t batch_size) {
  if (next_ >= indices_.size() || batch_size == 0) return torch::nullopt;
  const size_t end = std::min(indices_.size(), next_ + batch_size);
  std::vector<size_t> batch(indices_.begin() + static_cast<std::ptrdiff_t>(next_),
                            indices_.begin() + static_cast<std::ptrdiff_t>(end));
  next_ = end;
  return batch;
}

void DistributedSampler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("epoch", torch::tensor(static_cast<int64_t>(epoch_)), /*is_buffer=*/true);
  archive.write("next", torch::tensor(static_cast<int64_t>(next_)), /*is_buffer=*/true);
}

void DistributedSampler::load(torch::serialize::InputArchive& archive) {
  torch::Tensor epoch = torch::empty(1, torch::kInt64), next = torch::empty(1, torch::kInt64);
  archive.read("epoch", epoch, /*is_buffer=*/true);
  archive.read("next", next, /*is_buffer=*/true);
  epoch_ = static_cast<size_t>(epoch.item<int64_t>());
  indices_ = indices();
  next_ = std::min(indices_.size(), static_cast<size_t>(next.item<int64_t>()));
}

}  // namespace ddp
