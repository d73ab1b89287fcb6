// The progress record: the fixed 128-byte layout a worker writes and its launcher reads to
// tell a hang from slow progress (docs/hangs.md). One record per worker, memory-mapped from
// RUN/attempt_K/LOCAL_RANK/progress (path in DDP_LAUNCH_PROGRESS_FILE). Plain C++17, no
// dependencies: the launcher and libddp both include it; python/ddp_progress.py mirrors it.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ddp::progress {

inline constexpr uint32_t kMagic = 0x50504444;  // "DDPP" in little-endian bytes
inline constexpr uint32_t kVersion = 1;
inline constexpr size_t kRecordSize = 128;
inline constexpr const char* kEnvVar = "DDP_LAUNCH_PROGRESS_FILE";

// Collective kinds (field op). Numbers are part of the format: append, never renumber.
enum class Op : uint32_t {
  kNone = 0,
  kAllReduce = 1,
  kBroadcast = 2,
  kAllGather = 3,
  kReduceScatter = 4,
  kBarrier = 5,
  kReduce = 6,
  kGather = 7,
  kScatter = 8,
  kAllToAll = 9,
  kSend = 10,
  kRecv = 11,
  kOther = 12,
};
// Element types (field dtype). Same rule.
enum class DType : uint32_t {
  kUnknown = 0,
  kFloat32 = 1,
  kFloat64 = 2,
  kFloat16 = 3,
  kBFloat16 = 4,
  kInt8 = 5,
  kUInt8 = 6,
  kInt32 = 7,
  kInt64 = 8,
  kBool = 9,
};

// Native byte order, every field naturally aligned; a single writer (the worker) updates
// fields with plain stores and bumps `updates` last; a reader may see a torn record and
// only relies on `updates` changing. Times are CLOCK_MONOTONIC nanoseconds (system-wide).
struct Record {
  uint32_t magic;               // 0: kMagic once the worker initialised the record
  uint32_t version;             // 4: kVersion
  uint64_t updates;             // 8: bumped by every write: any change is progress
  uint64_t step;                // 16: steps completed (heartbeat(step), a DDP step)
  uint64_t seq_entered;         // 24: collectives entered (the last one's 1-based number)
  uint64_t seq_completed;       // 32: collectives completed
  uint64_t numel;               // 40: element count of the last collective entered
  uint32_t op;                  // 48: its Op
  uint32_t dtype;               // 52: its DType
  uint32_t group;               // 56: its process group (0: the default group)
  uint32_t paused;              // 60: pause depth; > 0: a legitimate pause, not a hang
  uint64_t pause_deadline_ns;   // 64: the pause ends being legitimate then (0: no limit)
  uint64_t step_time_ns;        // 72: when `step` last changed
  uint64_t collective_time_ns;  // 80: when seq_entered or seq_completed last changed
  uint64_t write_time_ns;       // 88: when anything last changed
  uint64_t joined_time_ns;      // 96: when init_process_group returned (0: not yet, or not told)
  uint64_t restored_time_ns;    // 104: when the training state was restored (snapshot, checkpoint)
  uint32_t features;            // 112: kFeature* bits the program has shown (sticky)
  uint32_t saving_ms;           // 116: milliseconds steps spent blocked saving snapshots or checkpoints (sums; wraps)
  uint64_t restored_next_step;  // 120: the step the restored state trains next, its step + 1 (0: not told)
};
static_assert(sizeof(Record) == kRecordSize, "the progress record is 128 bytes");
static_assert(offsetof(Record, pause_deadline_ns) == 64, "layout is part of the format");
static_assert(offsetof(Record, write_time_ns) == 88, "layout is part of the format");
static_assert(offsetof(Record, restored_time_ns) == 104, "layout is part of the format");
static_assert(offsetof(Record, features) == 112, "layout is part of the format");
static_assert(offsetof(Record, restored_next_step) == 120, "layout is part of the format");

// Field features. Bits are part of the format: append, never renumber. A worker may set them
// before it initialises the record (magic still 0): read_record_features reads them either way.
// The program passed a standby point (python/ddp_standby.py point()): the launcher runs its
// Python standbys up to that point from then on (docs/warm-restarts.md).
inline constexpr uint32_t kFeatureStandbyPoint = 1u << 0;

inline const char* op_name(uint32_t op) {
  static const char* const kNames[] = {"none",    "all_reduce", "broadcast", "all_gather", "reduce_scatter",
                                       "barrier", "reduce",     "gather",    "scatter",    "all_to_all",
                                       "send",    "recv",       "collective"};
  return op < sizeof kNames / sizeof kNames[0] ? kNames[op] : "collective";
}

inline const char* dtype_name(uint32_t dtype) {
  static const char* const kNames[] = {"?",    "float32", "float64", "float16", "bfloat16",
                                       "int8", "uint8",   "int32",   "int64",   "bool"};
  return dtype < sizeof kNames / sizeof kNames[0] ? kNames[dtype] : "?";
}

}  // namespace ddp::progress
