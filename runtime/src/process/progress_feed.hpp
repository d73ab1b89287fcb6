// The progress feed: libddp's writer of the launcher's progress record
// (contract/progress_record.hpp, docs/hangs.md). open_from_env() maps DDP_LAUNCH_PROGRESS_FILE
// once (absent or unusable: every call stays a cheap no-op); collectives, DDP steps and pauses
// then update it with plain stores (no system call). Thread-safe; torch-free.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "contract/progress_record.hpp"

namespace ddp::detail::feed {

// Maps the record named by DDP_LAUNCH_PROGRESS_FILE; idempotent. Never throws.
void open_from_env();
bool enabled();
// In a forked child (ddp::spawn): the parent's record is not this process's; feed nothing.
void disable_in_child();

// A collective was entered: returns its 1-based sequence number (0 when the feed is off).
uint64_t enter(progress::Op op, uint64_t numel, progress::DType dtype, uint32_t group);
// Collectives up to `seq` have completed (never moves backwards; 0 is ignored).
void complete(uint64_t seq);
// The last collective entered (0 when the feed is off or none was entered yet).
uint64_t last_entered();
// One more DDP step completed.
void step();
// The process group is initialised / the training state was restored (the recovery's phases).
// With the restored state's step: the record's later steps count on from it (global steps).
void joined();
void restored(std::optional<int64_t> step = std::nullopt);
// The training thread was blocked saving a snapshot or a checkpoint for `blocked` (summed).
void saved(std::chrono::nanoseconds blocked);
// Feeds saved() with its own lifetime: one on the stack of a save.
class SavingClock {
 public:
  SavingClock() : start_(std::chrono::steady_clock::now()) {}
  ~SavingClock() { saved(std::chrono::steady_clock::now() - start_); }
  SavingClock(const SavingClock&) = delete;
  SavingClock& operator=(const SavingClock&) = delete;

 private:
  std::chrono::steady_clock::time_point start_;
};
// A legitimate pause begins (timeout_ns 0: no limit) / ends; they nest.
void pause_begin(uint64_t timeout_ns);
void pause_end();

}  // namespace ddp::detail::feed
