#include "resume.hpp"

#include <filesystem>

#include <ddp/ddp.hpp>

#include "checkpoint_files.hpp"
#include "model.hpp"

namespace ddp::train {
namespace {

namespace fs = std::filesystem;

int64_t extra_int(const ddp::CheckpointExtra& extra, const std::string& key, const std::string& path) {
  const auto it = extra.find(key);
  if (it == extra.end() || !it->second.isInt()) {
    throw ddp::CheckpointError("checkpoint " + path + " has no '" + key +
                               "' entry: it was not written by train; remove it or pass --no-resume");
  }
  return it->second.toInt();
}

// Rank 0's newest checkpoint step, broadcast to every rank; -1 when there is none.
int64_t latest_step(const TrainOptions& o) {
  int64_t step = -1;
  if (ddp::get_rank() == 0) {
    if (auto latest = latest_checkpoint(o.checkpoint_dir)) step = *checkpoint_step(fs::path(*latest).filename());
  }
  auto t = torch::tensor({step}, torch::kLong).to(ddp::device());
  ddp::broadcast(t, 0);
  return t.item<int64_t>();
}

Position position_from(const ddp::CheckpointExtra& extra, const std::string& path) {
  Position pos;
  pos.epoch = extra_int(extra, "epoch", path);
  pos.batch = extra_int(extra, "batch", path);
  pos.step = extra_int(extra, "step", path);
  pos.loss_count = extra_int(extra, "loss_count", path);
  const auto loss = extra.find("loss_sum");
  pos.loss_sum = loss != extra.end() && loss->second.isDouble() ? loss->second.toDouble() : 0.0;
  if (extra_int(extra, "world_size", path) != ddp::get_world_size() && pos.batch > 0) {
    pos.batch = pos.loss_count = 0;  // another world size shards the epoch differently: redo it
    pos.loss_sum = 0;
  }
  return pos;
}

ddp::CheckpointExtra position_extra(const Position& pos, const ddp::PowerSgdState* powersgd) {
  ddp::CheckpointExtra extra = powersgd ? powersgd->state() : ddp::CheckpointExtra{};
  extra.insert({{"epoch", pos.epoch},
                {"batch", pos.batch},
                {"step", pos.step},
                {"loss_sum", pos.loss_sum},
                {"loss_count", pos.loss_count},
                {"world_size", int64_t(ddp::get_world_size())}});
  return extra;
}

}  // namespace

void save_position(const TrainOptions& o, torch::nn::Sequential& net, torch::optim::SGD& optimizer, Position pos,
                   const ddp::PowerSgdState* powersgd) {
  pos.loss_sum = mean_over_ranks(pos.loss_sum);
  const ddp::CheckpointExtra extra = position_extra(pos, powersgd);
  ddp::save_checkpoint((fs::path(o.checkpoint_dir) / checkpoint_name(pos.step)).string(), *net, &optimizer, extra);
  if (ddp::get_rank() == 0) remove_stale_checkpoints(o.checkpoint_dir, o.keep_checkpoints);
}

std::optional<ResumePoint> resume_latest(const TrainOptions& o, torch::nn::Sequential& net,
                                         torch::optim::SGD& optimizer, ddp::PowerSgdState* powersgd) {
  const int64_t step = latest_step(o);
  if (step < 0) return std::nullopt;
  const std::string path = (fs::path(o.checkpoint_dir) / checkpoint_name(step)).string();
  ddp::CheckpointExtra extra;
  try {
    extra = ddp::load_checkpoint(path, *net, &optimizer);
  } catch (const ddp::CheckpointError& e) {
    throw ddp::CheckpointError(std::string(e.what()) + " (resuming from " + o.checkpoint_dir +
                               "; pass --no-resume or another --checkpoint-dir to start fresh)");
  }
  if (powersgd && extra.count("powersgd/iteration")) powersgd->load_state(extra);
  ResumePoint point;
  point.position = position_from(extra, path);
  point.path = path;
  return point;
}

bool save_snapshot(ddp::Snapshot& snapshot, torch::nn::Sequential& net, torch::optim::SGD& optimizer,
                   const Position& pos, const ddp::PowerSgdState* powersgd) {
  return snapshot.save(pos.step, *net, &optimizer, position_extra(pos, powersgd));
}

std::optional<ResumePoint> resume_newest(const TrainOptions& o, ddp::Snapshot& snapshot, torch::nn::Sequential& net,
                                         torch::optim::SGD& optimizer, ddp::PowerSgdState* powersgd) {
  std::optional<ddp::Snapshot::Restored> restored;
  try {
    restored = snapshot.restore_newest(*net, &optimizer, o.checkpoint_dir);
  } catch (const ddp::CheckpointError& e) {
    throw ddp::CheckpointError(
        std::string(e.what()) + " (resuming from " + o.checkpoint_dir +
        " or the in-memory snapshot; pass --no-resume or another --checkpoint-dir to start fresh)");
  }
  if (!restored) return std::nullopt;
  if (powersgd && restored->extra.count("powersgd/iteration")) powersgd->load_state(restored->extra);
  ResumePoint point;
  if (restored->source != "snapshot") {
    point.position = position_from(restored->extra, restored->source);
    point.path = restored->source;
    return point;
  }
  point.position = position_from(restored->extra, "the in-memory snapshot");
  point.from_snapshot = true;
  point.snapshot_source = restored->source_rank;
  point.healed_ranks = restored->healed_ranks;
  return point;
}

std::string resumed_from_text(const ResumePoint& point, int restart) {
  const std::string epoch = "epoch " + std::to_string(point.position.epoch + 1);
  const std::string when = ", restart " + std::to_string(restart);
  if (!point.from_snapshot)
    return point.path + " (" + epoch + ", step " + std::to_string(point.position.step) + when + ")";
  std::string how = "every rank had its own";
  if (!point.healed_ranks.empty()) {
    how = point.healed_ranks.size() == 1 ? "rank " : "ranks ";
    for (size_t i = 0; i < point.healed_ranks.size(); ++i)
      how += (i ? ", " : "") + std::to_string(point.healed_ranks[i]);
    how += " healed from rank " + std::to_string(point.snapshot_source);
  }
  return "the in-memory snapshot of step " + std::to_string(point.position.step) + " (" + epoch + when + "; " + how +
         ")";
}

}  // namespace ddp::train
