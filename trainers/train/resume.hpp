// `train`'s checkpoints as training positions: save_position writes the model, the optimizer
// and where training stands (Position, in the checkpoint's extra values); resume_latest has
// rank 0 pick the newest checkpoint and every rank load that same file. Both are collective
// (call them on every rank at the same point); they throw ddp::CheckpointError with a hint.
// The same positions go into in-memory snapshots (save_snapshot, resume_from_snapshot).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ddp/powersgd.hpp>
#include <ddp/snapshot.hpp>
#include <torch/torch.h>

#include "train_options.hpp"

namespace ddp::train {

// Where training stands; saved in each checkpoint's extra values.
struct Position {
  int64_t epoch = 0;       // current epoch (0-based)
  int64_t batch = 0;       // optimizer steps done in this epoch
  int64_t step = 0;        // optimizer steps done in total
  double loss_sum = 0;     // sum of step losses this epoch (mean over ranks)
  int64_t loss_count = 0;  // steps in loss_sum
};

struct ResumePoint {
  Position position;
  std::string path;  // the checkpoint it was loaded from ("" for an in-memory snapshot)
  bool from_snapshot = false;
  int snapshot_source = -1;       // the rank that sent the snapshot to healed_ranks (-1: none needed it)
  std::vector<int> healed_ranks;  // the ranks that had no snapshot of that step and received it
};

// How a resume point was reached, for train's start-up line: "the in-memory snapshot of step
// 100 (epoch 3, restart 1; rank 1 healed from rank 0)", "/ckpt/ckpt_000000090.pt (epoch 2,
// step 90, restart 1)".
std::string resumed_from_text(const ResumePoint& point, int restart);

// Saves <checkpoint_dir>/ckpt_<pos.step>.pt with pos.loss_sum averaged over ranks (and the
// PowerSGD state when `powersgd` is set); rank 0 then removes all but the newest --keep-checkpoints.
void save_position(const TrainOptions& options, torch::nn::Sequential& net, torch::optim::SGD& optimizer, Position pos,
                   const ddp::PowerSgdState* powersgd = nullptr);

// Loads the latest checkpoint of checkpoint_dir into net and optimizer (and `powersgd`, when
// the checkpoint has PowerSGD state; one without starts PowerSGD afresh); nullopt when there
// is none. A checkpoint from another world size restarts its epoch (the shards differ).
std::optional<ResumePoint> resume_latest(const TrainOptions& options, torch::nn::Sequential& net,
                                         torch::optim::SGD& optimizer, ddp::PowerSgdState* powersgd = nullptr);

// The in-memory snapshot of pos (this rank's own loss_sum: no collective) with the PowerSGD
// state; false when snapshots are off.
bool save_snapshot(ddp::Snapshot& snapshot, torch::nn::Sequential& net, torch::optim::SGD& optimizer,
                   const Position& pos, const ddp::PowerSgdState* powersgd = nullptr);

// Collective: the newest state there is (ddp::Snapshot::restore_newest): the in-memory snapshot
// the ranks agree on (ranks without it are healed from one that has it), or the latest
// checkpoint of checkpoint_dir when that is newer or no rank holds a snapshot; loaded into net
// and optimizer; nullopt when there is neither. Each rank's data position follows from the
// global epoch, batch and step.
std::optional<ResumePoint> resume_newest(const TrainOptions& options, ddp::Snapshot& snapshot,
                                         torch::nn::Sequential& net, torch::optim::SGD& optimizer,
                                         ddp::PowerSgdState* powersgd = nullptr);

}  // namespace ddp::train
