// In-memory snapshots (docs/snapshots.md): the model's parameters and buffers, the optimizer
// state and the trainer's position copied into the region the launcher keeps for this local
// rank (DDP_LAUNCH_SNAPSHOT_FILE, in /dev/shm), which outlives the worker and every restart.
// Two slots, checksum last: a snapshot torn by a crash is never restored. The payload is a
// ddp::save_checkpoint archive, byte for byte. Not thread-safe; save() blocks for the copy;
// restore() heals ranks without a snapshot from one that has it (runtime/src/snapshot_restore.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "ddp/checkpoint.hpp"

namespace ddp {

class Snapshot {
 public:
  // Opens the region named by DDP_LAUNCH_SNAPSHOT_FILE; without one (not under ddp-launch)
  // the snapshot is off: save() does nothing, restore() finds nothing.
  Snapshot();
  ~Snapshot();
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  bool enabled() const { return fd_ >= 0; }

  // Copies model, optimizer (may be null) and extra into the older slot as `step`. Local (not
  // collective). False when off; the first time the region cannot hold it (/dev/shm full or
  // too small) one warning names the size needed and snapshots stay off for this process.
  // Tensors on a GPU are copied to host memory first (synchronously).
  bool save(int64_t step, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
            const CheckpointExtra& extra = {});

  struct Restored {
    int64_t step = 0;
    CheckpointExtra extra;
    bool healed = false;            // this rank had no snapshot of `step` and received it
    int source_rank = -1;           // the rank that sent it to the others; -1: no rank needed it
    std::vector<int> healed_ranks;  // the ranks that received it (ascending); empty: each had its own
  };
  // Collective when the process group is initialised (every rank calls it, even with the
  // snapshot off). The ranks agree on S, the smallest newest step among the ranks that hold a
  // snapshot; a rank whose newest is later loads S from its older slot. Ranks without S (a
  // replacement node, an emptied region) receive it from the lowest rank that holds it (a
  // broadcast on ddp::device()) and keep it in their own region. Every rank then checks its
  // archive against model and optimizer, and only if all pass does each load it (tensors on
  // `device`, default ddp::device()). nullopt when no rank holds a snapshot (nothing loaded).
  // A snapshot that does not match the model throws CheckpointError naming the tensor, on
  // every rank (nothing loaded anywhere). The private parts (the extra values) are the
  // source's on a healed rank: derive per-rank positions from global ones.
  std::optional<Restored> restore(torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                  std::optional<torch::Device> device = std::nullopt);

  // The last save(): serialising (into host memory) and copying into the region, in seconds.
  double last_serialize_seconds() const { return serialize_s_; }
  double last_copy_seconds() const { return copy_s_; }
  uint64_t last_bytes() const { return bytes_; }

  template <typename T>
  bool save(int64_t step, const torch::nn::ModuleHolder<T>& model, const torch::optim::Optimizer* optimizer,
            const CheckpointExtra& extra = {}) {
    return save(step, *model, optimizer, extra);
  }
  template <typename T>
  std::optional<Restored> restore(torch::nn::ModuleHolder<T>& model, torch::optim::Optimizer* optimizer,
                                  std::optional<torch::Device> device = std::nullopt) {
    return restore(*model, optimizer, device);
  }

 private:
  int fd_ = -1;
  std::string path_;
  std::string buffer_;  // the serialised archive, reused by every save
  double serialize_s_ = 0, copy_s_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace ddp
