// --uneven: how `train` splits an epoch's shuffled samples into shards of different sizes, with
// no padding and nothing dropped: rank r gets a contiguous share proportional to world + r
// (world 2: 2/5 and 3/5; world 4: 4/22 ... 7/22). Pure arithmetic, torch-free.
#pragma once

#include <cstdint>

namespace ddp::train {

struct Shard {
  int64_t begin = 0;  // positions in the epoch's permutation, [begin, end)
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Rank `rank`'s shard of `samples` positions among `world` ranks. Shards of ranks 0..world-1
// are consecutive and cover [0, samples) exactly.
Shard uneven_shard(int64_t samples, int world, int rank);

// Optimizer steps of the rank with the largest shard: micro-batches of `batch`, `accum` a step.
int64_t uneven_steps_per_epoch(int64_t samples, int world, int batch, int accum);

}  // namespace ddp::train
