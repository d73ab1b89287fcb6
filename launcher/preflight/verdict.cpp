#include "launcher/preflight/verdict.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace ddp::launch::preflight {
namespace {

// pass / warn / fail for a figure that must stay at or above `fail_below`, warned under `warn_below`.
Level at_least(double figure, double warn_below, double fail_below) {
  if (figure < fail_below) return Level::kFail;
  if (figure < warn_below) return Level::kWarn;
  return Level::kPass;
}

// Within a node only a warning: one busy core is the scheduler's to work around (and a loaded
// machine shows one for a moment); a slow node is found against the other nodes' median
// (rendezvous/node_screen.hpp, cpu_fail).
Finding cpu(const Figures& f, const cli::PreflightConf& c) {
  Finding out{"cpu", Level::kPass, "", fmt::format("warn below {:g} of the median core (cpu_warn)", c.cpu_warn)};
  if (f.cores.empty()) {
    out.figure = "no core measured";
    return out;
  }
  const double median = median_gflops(f);
  const auto slowest = std::min_element(f.cores.begin(), f.cores.end(),
                                        [](const auto& a, const auto& b) { return a.gflops < b.gflops; });
  const double ratio = median > 0 ? slowest->gflops / median : 0;
  out.level = ratio < c.cpu_warn ? Level::kWarn : Level::kPass;
  out.figure =
      fmt::format("{} core{}, median {:.2f} GFLOP/s; slowest: core {} at {:.2f} ({:.2f} of the median)", f.cores.size(),
                  f.cores.size() == 1 ? "" : "s", median, slowest->cpu, slowest->gflops, ratio);
  return out;
}

Finding memory(const Figures& f, const cli::PreflightConf& c) {
  return {"memory", at_least(f.mem_available_gib, 2 * c.mem_gib, c.mem_gib),
          fmt::format("{:.1f} GiB available", f.mem_available_gib),
          fmt::format("warn below {:g}, fail below {:g} GiB (mem_gib)", 2 * c.mem_gib, c.mem_gib)};
}

Finding folder(const Figures::Folder& d, double need_gib, const std::string& key) {
  Finding out{d.role == "snapshot regions" ? "shm" : "disk", Level::kPass, "",
              fmt::format("warn below {:g}, fail below {:g} GiB ({})", 2 * need_gib, need_gib, key)};
  if (!d.write_error.empty()) {
    out.level = Level::kFail;
    out.figure = fmt::format("{} {} is not writable: {}", d.role, d.path, d.write_error);
    out.threshold = "writable";
    return out;
  }
  out.level = at_least(d.free_gib, 2 * need_gib, need_gib);
  out.figure = fmt::format("{} {}: {:.1f} GiB free", d.role, d.path, d.free_gib);
  return out;
}

}  // namespace

const char* level_name(Level level) {
  switch (level) {
    case Level::kPass: return "pass";
    case Level::kWarn: return "warn";
    case Level::kFail: return "fail";
  }
  return "?";
}

namespace {

// NVML's clock event reasons that mean the hardware holds the clocks down (nvml.h).
constexpr std::pair<unsigned long long, const char*> kHeldDown[] = {{0x8, "hardware slowdown"},
                                                                    {0x20, "software thermal slowdown"},
                                                                    {0x40, "hardware thermal slowdown"},
                                                                    {0x80, "hardware power brake"}};

// The GPUs the job uses among NVML's: f.gpu_ids matched by index or by UUID (a prefix, as CUDA
// takes it); every GPU when the list is empty or names one NVML does not know. `which` says
// which were chosen ("" for all).
std::vector<const GpuFigures::Device*> job_devices(const Figures& f, std::string& which) {
  std::vector<const GpuFigures::Device*> all, chosen;
  for (const auto& d : f.gpus.devices) all.push_back(&d);
  for (const auto& id : f.gpu_ids) {
    const bool uuid = id.rfind("GPU-", 0) == 0;
    const auto match = std::find_if(all.begin(), all.end(), [&](const GpuFigures::Device* d) {
      return uuid ? !d->uuid.empty() && d->uuid.rfind(id, 0) == 0 : std::to_string(d->index) == id;
    });
    if (match == all.end()) return all;  // a MIG instance, a typo: judge every GPU
    chosen.push_back(*match);
  }
  if (chosen.empty() || chosen.size() == all.size()) return all;
  std::string ids;
  for (const auto& id : f.gpu_ids) ids += (ids.empty() ? "" : ",") + id;
  which = fmt::format(" (the job's {} of {})", ids, all.size());
  return chosen;
}

// The GPUs (only when the job uses some here): NVML's count, and per GPU the job uses its
// uncorrected ECC errors and pending retired pages (fail), clocks held down by the hardware
// (warn).
std::vector<Finding> gpus(const Figures& f) {
  std::vector<Finding> out;
  if (f.gpus_needed <= 0) return out;
  const GpuFigures& g = f.gpus;
  const std::string what =
      "fail: fewer GPUs than the node's workers use, an uncorrected ECC error since the driver "
      "loaded, retired pages waiting for a reset; warn: clocks held down by the hardware";
  if (!g.nvml || (!g.error.empty() && g.devices.empty())) {
    out.push_back({"gpu", Level::kWarn, g.error + "; ECC, retired pages and clock reasons not checked", what});
    return out;
  }
  if (g.count < f.gpus_needed)
    out.push_back(
        {"gpu", Level::kFail,
         fmt::format("NVML sees {} GPU{}; this node's workers use {}", g.count, g.count == 1 ? "" : "s", f.gpus_needed),
         what});
  std::string which;
  const auto devices = job_devices(f, which);
  for (const GpuFigures::Device* device : devices) {
    const GpuFigures::Device& d = *device;
    const std::string gpu = fmt::format("GPU {}{}", d.index, d.name.empty() ? "" : " (" + d.name + ")");
    if (!d.error.empty()) out.push_back({"gpu", Level::kWarn, fmt::format("{}: {}", gpu, d.error), what});
    if (d.ecc_uncorrected > 0)
      out.push_back({"gpu", Level::kFail,
                     fmt::format("{}: {} uncorrected ECC error{} since the driver loaded", gpu, d.ecc_uncorrected,
                                 d.ecc_uncorrected == 1 ? "" : "s"),
                     what});
    if (d.retired_pending)
      out.push_back({"gpu", Level::kFail, gpu + ": retired memory pages wait for a GPU reset", what});
    std::string held;
    for (const auto& [bit, reason] : kHeldDown)
      if (d.clock_events & bit) held += (held.empty() ? "" : ", ") + std::string(reason);
    if (!held.empty())
      out.push_back({"gpu", Level::kWarn,
                     fmt::format("{}: clocks held down ({}); SM at {} of {} MHz", gpu, held, d.sm_mhz, d.sm_max_mhz),
                     what});
  }
  if (out.empty())
    out.push_back({"gpu", Level::kPass,
                   fmt::format("{} GPU{}{}: no uncorrected ECC error, no pending retired page, clocks not held down",
                               devices.size(), devices.size() == 1 ? "" : "s", which),
                   what});
  return out;
}

// NCCL (a GPU job, nccl_mib > 0): the all-reduce must run through with the right sum, and its
// bus bandwidth stay at or above nccl_min_gbps; without the libraries, a warning. Across nodes
// the leader compares the bus bandwidths (rendezvous/node_screen.hpp).
std::vector<Finding> nccl(const Figures& f, const cli::PreflightConf& c) {
  if (!f.nccl) return {};
  const NcclFigures& n = *f.nccl;
  const std::string what = fmt::format(
      "fail: the all-reduce fails or its sum is wrong{}; across nodes: warn below {:g}, fail below {:g} of the "
      "nodes' median bus bandwidth (nccl_warn, nccl_fail)",
      c.nccl_min_gbps > 0 ? fmt::format(", bus bandwidth below {:g} GB/s (nccl_min_gbps)", c.nccl_min_gbps) : "",
      c.nccl_warn, c.nccl_fail);
  if (!n.loaded) return {{"nccl", Level::kWarn, n.error + "; the NCCL all-reduce not checked", what}};
  const std::string gpus = fmt::format("{} GPU{}", n.gpus, n.gpus == 1 ? "" : "s");
  if (!n.error.empty())
    return {{"nccl", Level::kFail,
             fmt::format("all-reduce of {:g} MiB on {}{}: {}", n.mib, gpus,
                         n.version.empty() ? "" : " (NCCL " + n.version + ")", n.error),
             what}};
  std::string figure =
      fmt::format("NCCL {}, {} all-reduce {:g} MiB in {:.2f} ms: ", n.version.empty() ? "?" : n.version, gpus, n.mib,
                  n.seconds * 1e3);
  if (n.gpus < 2) {
    figure += "no link between GPUs to measure (one GPU), the sum right";
    return {{"nccl", Level::kPass, figure, what}};
  }
  figure += fmt::format("bus bandwidth {:.1f} GB/s (algorithm {:.1f} GB/s), the sum right", n.busbw_gbps, n.algbw_gbps);
  const bool slow = c.nccl_min_gbps > 0 && n.busbw_gbps < c.nccl_min_gbps;
  return {{"nccl", slow ? Level::kFail : Level::kPass, figure, what}};
}

}  // namespace

std::vector<Finding> judge(const Figures& f, const cli::PreflightConf& c) {
  std::vector<Finding> out{cpu(f, c), memory(f, c)};
  for (auto& g : gpus(f)) out.push_back(std::move(g));
  for (auto& n : nccl(f, c)) out.push_back(std::move(n));
  for (const auto& d : f.folders) {
    const bool shm = d.role == "snapshot regions";
    out.push_back(folder(
        d, shm ? c.shm_gib_per_worker * f.workers : c.disk_gib,
        shm ? fmt::format("shm_gib_per_worker x {} worker{}", f.workers, f.workers == 1 ? "" : "s") : "disk_gib"));
  }
  return out;
}

double median_gflops(const Figures& f) {
  std::vector<double> rates;
  for (const auto& core : f.cores) rates.push_back(core.gflops);
  return median(std::move(rates));
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string failed_summary(const std::vector<Finding>& findings) {
  std::string out;
  for (const auto& f : findings)
    if (f.level == Level::kFail) out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", f.check, f.figure);
  return out;
}

Level worst(const std::vector<Finding>& findings) {
  Level w = Level::kPass;
  for (const auto& f : findings) w = std::max(w, f.level);
  return w;
}

std::string format_findings(const std::vector<Finding>& findings) {
  std::string out;
  for (const auto& f : findings)
    out += fmt::format("preflight: {} {}: {} ({})\n", level_name(f.level), f.check, f.figure, f.threshold);
  return out;
}

}  // namespace ddp::launch::preflight
