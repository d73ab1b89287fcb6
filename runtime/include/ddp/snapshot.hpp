// In-memory snapshots (docs/snapshots.md): the model's parameters and buffers, the optimizer
// state and the trainer's position copied into the region the launcher keeps for this local
// rank (DDP_LAUNCH_SNAPSHOT_FILE, in /dev/shm), which outlives the worker and every restart.
// Two slots, checksum last: a snapshot torn by a crash is never restored. The payload is a
// ddp::save_checkpoint archive; state on the CPU is laid out as a tensor table (the archive's
// tensors in place, loaded at memory speed; ddp::load_checkpoint reads both). Not thread-safe.
// On the CPU save() copies each tensor once, into the region, and returns; on a GPU it only
// queues copies into pinned memory on a side stream, and the serialisation, checksum and copy
// into the region run on a background thread while training goes on (the next save(),
// restore(), wait() and the destructor wait for it; so does this rank's next gradient
// all-reduce, so ranks never drift two snapshots apart). restore() heals ranks without a
// snapshot from one that has it (runtime/src/checkpoint/snapshot_restore.cpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "ddp/checkpoint.hpp"

namespace ddp {

namespace detail {
class ArchiveStaging;
class SnapshotWriter;
struct TensorTable;
}  // namespace detail

class Snapshot {
 public:
  // Opens the region named by DDP_LAUNCH_SNAPSHOT_FILE; without one (not under ddp-launch)
  // the snapshot is off: save() does nothing, restore() finds nothing.
  Snapshot();
  ~Snapshot();
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;

  bool enabled() const { return fd_ >= 0; }

  // Waits for the previous write if it still runs, then writes the tensors of model, optimizer
  // (may be null) and extra into the older slot as `step`. Local (not collective). State on the
  // CPU: a tensor table, each tensor copied once into the region on this thread (a few
  // milliseconds for 23 MB; nothing runs in the background). State on a GPU: copies into pinned
  // memory on a side stream, the model's buffers (which the next forward writes) first, the
  // current stream waiting for them; parameters and optimizer state overlap the next forward
  // and backward, and the DDP backward's fence (its last all-reduce waits for the write) holds
  // the optimizer step back until they landed; without a DDP model the current stream waits for
  // them all (still without blocking this thread); serialising and writing run in the
  // background. Values that fit neither (sparse or quantized tensors, custom class objects in
  // extra) make this save serialise the archive on the caller's thread; after staging failed
  // once (no pinned memory left) one warning, and every save does. The snapshot counts once
  // written: a kill before that leaves the slot torn and the previous snapshot in use (one step
  // more to redo). False when off; the first time the region cannot hold a snapshot (/dev/shm
  // full or too small) one warning names the size needed, that save() (written in place) or the
  // next save() or wait() (written in the background) returns false, and snapshots stay off for
  // this process; so does a serialisation that fails in the background (its message is printed).
  bool save(int64_t step, const torch::nn::Module& model, const torch::optim::Optimizer* optimizer,
            const CheckpointExtra& extra = {});

  // Blocks until the write save() started is in the region. False when it failed (the
  // warning is printed, snapshots are off) or snapshots are off.
  bool wait();

  struct Restored {
    int64_t step = 0;
    CheckpointExtra extra;
    bool healed = false;              // this rank had no snapshot of `step` and received it
    int source_rank = -1;             // the rank that sent it to the others; -1: no rank needed it
    std::vector<int> healed_ranks;    // the ranks that received it (ascending); empty: each had its own
    std::string source = "snapshot";  // restore_newest: "snapshot", or the checkpoint file's path
    std::string why;                  // restore_newest: why that one, in words
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
  // source's on a healed rank: derive per-rank positions from global ones. Waits for this
  // process's write in flight first.
  std::optional<Restored> restore(torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                  std::optional<torch::Device> device = std::nullopt);

  // Collective like restore(): the newest complete state there is. The newest checkpoint in
  // `checkpoint_dir` (ckpt_<step>.pt, the name train and ddp-launch --snapshot-persist-dir write;
  // group rank 0's listing, so every rank must see the same folder) competes with the snapshot
  // the ranks agree on: a newer checkpoint wins (a job that checkpoints more often than it
  // snapshots), and any checkpoint wins when no rank holds a snapshot; it is loaded with
  // load_checkpoint on every rank. Restored::source and ::why say which and why; rank 0 prints
  // it in one line. nullopt when there is neither.
  std::optional<Restored> restore_newest(torch::nn::Module& model, torch::optim::Optimizer* optimizer,
                                         const std::string& checkpoint_dir,
                                         std::optional<torch::Device> device = std::nullopt);

  // Timings in seconds. The caller's thread: building the archive and staging its tensors in
  // the last save() (serialising too when it could not be staged); waiting for the previous
  // write in the last save() or wait(); all waits for writes, those of save(), wait(),
  // restore() and of this process's collectives (the fence) together; and all the time
  // training was blocked by snapshots (every save() and every wait). The background thread:
  // serialisation + checksum + copy of the last write collected, and its serialisation alone.
  // Bytes: the payload of the last write collected; the tensors the last save() staged.
  double last_serialize_seconds() const { return serialize_s_; }
  double last_wait_seconds() const { return wait_s_; }
  double total_wait_seconds() const;
  double total_blocked_seconds() const { return serialize_total_s_ + total_wait_seconds(); }
  double last_copy_seconds() const { return copy_s_; }
  double last_background_serialize_seconds() const { return background_serialize_s_; }
  uint64_t last_bytes() const { return bytes_; }
  uint64_t last_staged_bytes() const { return staged_bytes_; }
  // The last save() wrote a tensor table in place (state on the CPU): no background work.
  bool last_in_place() const { return in_place_; }

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
  template <typename T>
  std::optional<Restored> restore_newest(torch::nn::ModuleHolder<T>& model, torch::optim::Optimizer* optimizer,
                                         const std::string& checkpoint_dir,
                                         std::optional<torch::Device> device = std::nullopt) {
    return restore_newest(*model, optimizer, checkpoint_dir, device);
  }

 private:
  bool collect();  // waits for the write in flight; false (warned, off) if it failed
  bool write_table(int64_t step, const detail::TensorTable& table, std::chrono::steady_clock::time_point start);
  char* mapped(uint64_t bytes);  // the region mapped shared, at least `bytes` of it; null (errno) if not
  void unmap();
  void turn_off(uint64_t bytes, uint64_t bytes_needed, int error);  // the warning; snapshots off
  void close_region();                                              // snapshots off

  int fd_ = -1;
  std::string path_;
  std::string buffer_;                               // the payload buffer, back from the last write
  std::unique_ptr<detail::ArchiveStaging> staging_;  // host copies of the tensors, reused
  bool staging_ok_ = true;                           // off after staging failed once (warned)
  std::unique_ptr<detail::SnapshotWriter> writer_;
  double serialize_s_ = 0, serialize_total_s_ = 0, wait_s_ = 0, waits_s_ = 0, copy_s_ = 0;
  double background_serialize_s_ = 0;
  uint64_t bytes_ = 0, staged_bytes_ = 0;
  bool in_place_ = false;
  void* map_ = nullptr;  // the region, mapped by mapped()
  uint64_t map_size_ = 0;
};

}  // namespace ddp
