#include "uneven_shards.hpp"

#include <algorithm>

namespace ddp::train {
namespace {

// Sum of the weights (world + q) of ranks q < rank.
int64_t weight_before(int world, int rank) { return int64_t(rank) * world + int64_t(rank) * (rank - 1) / 2; }

}  // namespace

Shard uneven_shard(int64_t samples, int world, int rank) {
  const int64_t total = weight_before(world, world);
  return {samples * weight_before(world, rank) / total, samples * weight_before(world, rank + 1) / total};
}

int64_t uneven_steps_per_epoch(int64_t samples, int world, int batch, int accum) {
  int64_t most = 0;
  for (int r = 0; r < world; ++r) {
    const int64_t micro_batches = (uneven_shard(samples, world, r).size() + batch - 1) / batch;
    most = std::max(most, (micro_batches + accum - 1) / accum);
  }
  return most;
}

}  // namespace ddp::train
