// The pre-flight verdict of one node from what it measured (measure.hpp), against the
// thresholds of --preflight-conf: one Finding per check (pass, warn or fail, with the figure
// and the threshold), and how they read on the console. Pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launcher/cli/preflight_conf.hpp"

namespace ddp::launch::preflight {

// What NVML says of this node's GPUs (gpu_probe.hpp).
struct GpuFigures {
  bool nvml = false;  // the library loaded
  std::string error;  // why nothing (or not everything) could be read
  int count = 0;      // every GPU NVML sees
  struct Device {
    int index = 0;
    std::string name;
    std::string uuid;                     // "GPU-8f2e..." ("": not reported)
    long long ecc_uncorrected = -1;       // uncorrected ECC errors since the driver loaded (-1: not reported)
    bool retired_pending = false;         // retired pages waiting for a reset
    unsigned long long clock_events = 0;  // nvmlClocksEventReasons bits (throttle reasons)
    unsigned sm_mhz = 0, sm_max_mhz = 0;
    std::string error;
  };
  std::vector<Device> devices;
};

// What the NCCL check measured (nccl_probe.hpp): the node's GPUs all-reducing in one process.
struct NcclFigures {
  bool loaded = false;  // the CUDA driver and NCCL loaded (false: not checked, `error` says why)
  std::string error;    // loaded: why the all-reduce did not run through, or its sum was wrong
  std::string version;  // NCCL's, "2.27.7"
  int gpus = 0;
  double mib = 0;         // each GPU's buffer
  int iterations = 0;     // timed, after two untimed
  double seconds = 0;     // one all-reduce, the timed ones' mean
  double algbw_gbps = 0;  // buffer bytes / seconds
  double busbw_gbps = 0;  // algbw x 2(n-1)/n: what each GPU's links carried (0 for one GPU)
};

// What a node measured.
struct Figures {
  struct Core {
    int cpu = 0;        // its id (sched_getaffinity's numbering)
    double gflops = 0;  // its matrix-multiply rate, with every allowed core multiplying at once
  };
  std::vector<Core> cores;
  double mem_available_gib = 0;  // /proc/meminfo MemAvailable
  struct Folder {
    std::string role;  // "snapshot regions", "run directory", "--snapshot-persist-dir"
    std::string path;
    double free_gib = 0;      // statvfs: what an unprivileged writer may use
    std::string write_error;  // "": a file was created, written, synced and removed there
  };
  std::vector<Folder> folders;  // the snapshot regions' first
  int workers = 1;              // this node's workers (the snapshot regions' count)
  int gpus_needed = 0;          // GPUs the job uses on this node (0: none: no GPU check)
  // Which, as CUDA_VISIBLE_DEVICES names them (indices, taken as NVML's: alike on a node of one
  // GPU model; or UUIDs): only those are judged. Empty, or a name NVML does not know (a MIG
  // instance): all.
  std::vector<std::string> gpu_ids;
  GpuFigures gpus;                  // measured when gpus_needed > 0
  std::optional<NcclFigures> nccl;  // measured when gpus_needed > 0 and nccl_mib > 0
};

enum class Level { kPass, kWarn, kFail };
const char* level_name(Level level);  // "pass", "warn", "fail"

struct Finding {
  std::string check;  // "cpu", "memory", "shm", "disk", "gpu", "nccl"
  Level level = Level::kPass;
  std::string figure;     // what was measured, e.g. "core 3: 4.1 GFLOP/s, 0.42 of the median core (9.8)"
  std::string threshold;  // e.g. "warn below 0.75, fail below 0.5 of the median (cpu_warn, cpu_fail)"
};

std::vector<Finding> judge(const Figures& figures, const cli::PreflightConf& conf);

// The median core's rate (0 when none was measured): what the leader compares across nodes.
double median_gflops(const Figures& figures);

// The median (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> values);

// The failed findings as one line ("" when none failed): "shm: snapshot regions ...; cpu: ...".
std::string failed_summary(const std::vector<Finding>& findings);

Level worst(const std::vector<Finding>& findings);

// One line per finding: "preflight: LEVEL CHECK: FIGURE (THRESHOLD)".
std::string format_findings(const std::vector<Finding>& findings);

}  // namespace ddp::launch::preflight
