

#include "launcher/console/notice.hpp"
#include "launcher/os/shm_file.hpp"
#include "launcher/snapshot/snapshot_regions.hpp"
#include <fmt/format.h>
#include <unistd.h>

namespace ddp::launch::snapshot {

SnapshotRegions::SnapshotRegions(const cli::Environment& env, const SnapshotPersistConfig& persist,
                                 report::EventLog* events) {
  const auto dir = cli::lookup(env, kSnapshotDirEnvVar);
  dir_ = dir && !dir->empty() ? *dir : "/dev/shm";
  os::sweep_orphaned_shm_files(dir_, kSnapshotFilePrefix);
  if (!persist.dir.empty()) persister_ = std::make_unique<SnapshotPersister>(persist, events);
}

SnapshotRegions::~SnapshotRegions() {
  persister_.reset();  // the end's or a stop's persist reads the regions: before they go
  for (const auto& [rank, path] : paths_) ::unlink(path.c_str());
}

std::string SnapshotRegions::path_for(int local_rank) {
  if (unavailable_) return "";
  if (auto it = paths_.find(local_rank); it != paths_.end()) return it->second;
  os::ShmFileResult r = os::create_private_shm_file(dir_, kSnapshotFilePrefix, std::to_string(local_rank));
  if (r.path.empty()) {
    unavailable_ = true;
    console::launcher_notice(
        fmt::format("in-memory snapshots are off: {}; the workers run without them "
                    "(set {} to a writable tmpfs folder)",
                    r.error, kSnapshotDirEnvVar));
    return "";
  }
  if (local_rank == 0 && persister_) persister_->set_source(r.path);
  return paths_[local_rank] = r.path;
}

void SnapshotRegions::persist(PersistReason why) {
  if (persister_) persister_->request(why);
}

}  // namespace ddp::launch::snapshot
