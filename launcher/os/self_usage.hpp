// The launcher's own resource use, for its /metrics: CPU seconds (user + system, this
// process's threads; not the workers') from getrusage, resident memory from /proc/self/statm,
// and when the process started. Cheap (one syscall and one small read); never throws.
#pragma once

namespace ddp::launch::os {

struct SelfUsage {
  double cpu_seconds = 0;
  double resident_bytes = 0;
  double start_time_unix_s = 0;  // when this process started (the kernel's boot time + its start tick)
};

SelfUsage self_usage();

}  // namespace ddp::launch::os
