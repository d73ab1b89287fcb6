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
  // Links (several nodes): each node sends to its successor in a ring of the round's nodes for
  // net_ms, then receives from it as long: MB/s each way and the round trip. A node whose two
  // sends (or two receives) are below net_fail of the links' median fails, below net_warn
  // warns; below net_min_mbps (absolute; 0: none) too. A node both of whose links' round trips
  // exceed rtt_fail x the links' median (and the median + 1 ms) fails, rtt_warn x warns.
  double net_ms = 100;
  double net_warn = 0.5;
  double net_fail = 0.25;
  double net_min_mbps = 0;
  double rtt_warn = 4;
  double rtt_fail = 10;
  // Clock: the offset to the store's host's clock; above clock_warn_s warns, above
  // clock_fail_s fails (0: never).
  double clock_warn_s = 0.5;
  double clock_fail_s = 0;
  // NCCL (a GPU job): the node's GPUs all-reduce nccl_mib MiB each (0: no NCCL check) in a
  // child process; an all-reduce that fails or returns a wrong sum fails the node. Its bus
  // bandwidth (two or more GPUs) below nccl_min_gbps GB/s fails (0: no absolute floor); across
  // nodes (the round's leader), below nccl_fail of the nodes' median fails, below nccl_warn warns.
  double nccl_mib = 64;
  double nccl_min_gbps = 0;
  double nccl_warn = 0.75;
  double nccl_fail = 0.5;
};

PreflightConf parse_preflight_conf(const std::string& value);

}  // namespace ddp::launch::cli
