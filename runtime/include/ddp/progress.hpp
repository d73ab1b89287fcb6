// Progress feed to ddp-launch's hang detection (docs/hangs.md). Under ddp-launch
// (DDP_LAUNCH_PROGRESS_FILE set) libddp records, from init_process_group() on, every
// collective (sequence number, op, size, dtype, group; entered/completed) and every DDP step
// in a memory-mapped record, with plain stores. Without it all of this is a no-op.
#pragma once

#include <chrono>

namespace ddp {

// A legitimate long pause (a checkpoint save, an evaluation, a slow data reload): while one
// is alive the launcher takes this rank's silence for a pause, not a hang, until `timeout`
// has passed (0 or less: no limit). Nests; thread-safe. ddp::save_checkpoint and
// ddp::load_checkpoint hold one themselves.
class PauseProgress {
 public:
  explicit PauseProgress(std::chrono::milliseconds timeout = std::chrono::milliseconds(0));
  ~PauseProgress();
  PauseProgress(const PauseProgress&) = delete;
  PauseProgress& operator=(const PauseProgress&) = delete;
};

// True when a launcher watches this process's progress (after init_process_group()).
bool progress_feed_enabled();

}  // namespace ddp
