// CPU time of process groups, read from /proc: the hang detector's sign of life for workers
// that feed no progress record (a worker runs in its own session, so its process group
// holds it and the children it did not move elsewhere). One pass over /proc per call; does
// not block beyond reading small /proc files; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <set>

namespace ddp::launch::os {

// For each process group in `groups`: the sum of utime + stime (clock ticks) of its live
// processes. A group with no live process maps to 0; processes that vanish mid-scan are
// skipped. Any change between two calls means the group used CPU (or lost a process).
std::map<long, uint64_t> process_group_cpu_ticks(const std::set<long>& groups);

}  // namespace ddp::launch::os
