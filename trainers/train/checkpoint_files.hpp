// Naming and discovery of `train`'s checkpoints: <dir>/ckpt_<step, 9 digits>.pt. The latest
// is the highest step; temp files of an interrupted save never match. Filesystem reads only
// (no torch); remove_stale deletes all but the newest `keep`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::train {

std::string checkpoint_name(int64_t step);
// The step encoded in a file name, or nullopt if it is not a checkpoint name.
std::optional<int64_t> checkpoint_step(const std::string& file_name);
// Checkpoint paths in `dir`, oldest first; empty when dir does not exist.
std::vector<std::string> list_checkpoints(const std::string& dir);
std::optional<std::string> latest_checkpoint(const std::string& dir);
// Deletes all but the newest `keep` checkpoints (keep >= 1); returns the paths removed.
std::vector<std::string> remove_stale_checkpoints(const std::string& dir, int keep);

}  // namespace ddp::train
