// What the snapshot persister does with the newest in-memory snapshot (docs/snapshots.md,
// "Written to disk"): the file name `train --checkpoint-dir` reads (ckpt_<step, 9 digits>.pt),
// the temporary name beside it, whether to skip, and which earlier file of this launcher's
// goes. Pure: no I/O (the caller says whether the target exists); no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ddp::launch::snapshot {

// --snapshot-persist-dir and --snapshot-persist-interval (off: dir "").
struct SnapshotPersistConfig {
  std::string dir;          // where the files go ("": the launcher persists nothing)
  double interval_s = 300;  // between persists while workers run; 0: only on a failure, the end, a stop
};

// Why a persist was asked for (the event's "why").
enum class PersistReason { kInterval, kFailure, kEnd, kStop };
const char* to_string(PersistReason why);

// A file this launcher wrote.
struct PersistedFile {
  uint64_t step = 0;
  std::string path;
};

struct PersistPlan {
  enum class Action {
    kWrite,             // write `path` through `temp_path`, then remove `remove`
    kAlreadyPersisted,  // this launcher wrote that step last
    kOlder,             // this launcher already wrote a later step: keep that one
    kOnDisk,            // a file of that step is there and not ours (train's own): leave it
  };
  Action action = Action::kWrite;
  std::string path;       // DIR/ckpt_<step:09>.pt
  std::string temp_path;  // DIR/.ckpt_<step:09>.pt.tmp-<host>-<pid>
  std::string remove;     // the previous file this launcher wrote, "" when none (or the same)
};

// "ckpt_000000200.pt": train's checkpoint name (trainers/train/checkpoint_files.cpp).
std::string persisted_file_name(uint64_t step);

// `last`: the file this launcher wrote last; `target_exists`: DIR/ckpt_<step>.pt exists now.
PersistPlan plan_persist(const std::string& dir, uint64_t step, const std::optional<PersistedFile>& last,
                         bool target_exists, const std::string& host, long pid);

// "wrote the in-memory snapshot of step 200 to D/ckpt_000000200.pt (23.3 MB, 0.41 s)".
std::string persist_notice(uint64_t step, const std::string& path, uint64_t bytes, double seconds);

}  // namespace ddp::launch::snapshot
