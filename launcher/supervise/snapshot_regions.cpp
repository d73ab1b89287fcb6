#include "launcher/supervise/snapshot_regions.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include "launcher/os/shm_file.hpp"
#include "launcher/worker/output.hpp"

namespace ddp::launch::supervise {

SnapshotRegions::SnapshotRegions(const cli::Environment& env) {
  const auto dir = cli::lookup(env, kSnapshotDirEnvVar);
  dir_ = dir && !dir->empty() ? *dir : "/dev/shm";
  os::sweep_orphaned_shm_files(dir_, kSnapshotFilePrefix);
}

SnapshotRegions::~SnapshotRegions() {
  for (const auto& [rank, path] : paths_) ::unlink(path.c_str());
}

std::string SnapshotRegions::path_for(int local_rank) {
  if (unavailable_) return "";
  if (auto it = paths_.find(local_rank); it != paths_.end()) return it->second;
  os::ShmFileResult r = os::create_private_shm_file(dir_, kSnapshotFilePrefix, std::to_string(local_rank));
  if (r.path.empty()) {
    unavailable_ = true;
    worker::launcher_notice(
        fmt::format("in-memory snapshots are off: {}; the workers run without them "
                    "(set {} to a writable tmpfs folder)",
                    r.error, kSnapshotDirEnvVar));
    return "";
  }
  return paths_[local_rank] = r.path;
}

}  // namespace ddp::launch::supervise
