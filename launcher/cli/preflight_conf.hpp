// --preflight-conf k=v,...: the pre-flight checks' thresholds (docs/preflight.md says what each
// check measures). Pure; a bad item throws LaunchError(kUsage) naming it and what it takes.
#pragma once

#include <string>

namespace ddp::launch::cli {

struct PreflightConf {
  // CPU: each core's matrix-multiply rate against the node's median core (a throttled core, or
  // one another program holds, stands out): below cpu_warn, a warning. Across nodes (the round's
  // leader): a node whose median core is below cpu_warn of the nodes' median is warned, below
  // cpu_fail failed.
  double cpu_warn = 0.75;
  double cpu_fail = 0.5;
  double cpu_ms = 200;  // how long each core multiplies
  // Memory: MemAvailable below mem_gib fails, below twice it warns.
  double mem_gib = 1.0;
  // /dev/shm (the snapshot regions' folder): free below shm_gib_per_worker x the node's workers
  // fails, below twice it warns.
  double shm_gib_per_worker = 0.25;
  // The folders the job writes (its run directory, --snapshot-persist-dir): not writable fails;
  // free below disk_gib fails, below twice it warns.
  double disk_gib = 1.0;
};

PreflightConf parse_preflight_conf(const std::string& value);

}  // namespace ddp::launch::cli
