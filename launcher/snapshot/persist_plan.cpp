#include "launcher/snapshot/persist_plan.hpp"

#include <fmt/format.h>

namespace ddp::launch::snapshot {

const char* to_string(PersistReason why) {
  switch (why) {
    case PersistReason::kInterval: return "interval";
    case PersistReason::kFailure: return "failure";
    case PersistReason::kEnd: return "end";
    case PersistReason::kStop: return "stop";
  }
  return "interval";
}

std::string persisted_file_name(uint64_t step) { return fmt::format("ckpt_{:09d}.pt", step); }

PersistPlan plan_persist(const std::string& dir, uint64_t step, const std::optional<PersistedFile>& last,
                         bool target_exists, const std::string& host, long pid) {
  PersistPlan p;
  const std::string name = persisted_file_name(step);
  p.path = dir + "/" + name;
  p.temp_path = fmt::format("{}/.{}.tmp-{}-{}", dir, name, host, pid);
  const bool ours = last && last->path == p.path;
  if (last && last->step == step && ours) p.action = PersistPlan::Action::kAlreadyPersisted;
  else if (last && last->step > step) p.action = PersistPlan::Action::kOlder;
  else if (target_exists && !ours) p.action = PersistPlan::Action::kOnDisk;
  if (p.action == PersistPlan::Action::kWrite && last && !ours) p.remove = last->path;
  return p;
}

std::string persist_notice(uint64_t step, const std::string& path, uint64_t bytes, double seconds) {
  return fmt::format("wrote the in-memory snapshot of step {} to {} ({:.1f} MB, {:.2f} s)", step, path,
                     static_cast<double>(bytes) / 1e6, seconds);
}

}  // namespace ddp::launch::snapshot
