#include "launcher/preflight/gpu_probe.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <fmt/format.h>

namespace ddp::launch::preflight {
namespace {

// NVML's C interface, as far as this check uses it (nvml.h: return 0 is NVML_SUCCESS).
using Device = void*;
using InitFn = int (*)();
using CountFn = int (*)(unsigned*);
using HandleFn = int (*)(unsigned, Device*);
using NameFn = int (*)(Device, char*, unsigned);
using EccFn = int (*)(Device, int, int, unsigned long long*);  // error type, counter type
using PendingFn = int (*)(Device, int*);
using ReasonsFn = int (*)(Device, unsigned long long*);
using ClockFn = int (*)(Device, int, unsigned*);  // clock type
using ErrorFn = const char* (*)(int);

constexpr int kUncorrected = 1;  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatile = 0;     // NVML_VOLATILE_ECC: since the driver loaded
constexpr int kSmClock = 1;      // NVML_CLOCK_SM

template <typename F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(::dlsym(lib, name));
}

}  // namespace

GpuFigures probe_gpus() {
  GpuFigures g;
  const char* path = std::getenv(kNvmlLibraryEnvVar);
  const std::string file = path && *path ? path : "libnvidia-ml.so.1";
  void* lib = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    g.error = fmt::format("cannot load NVML ({}): no NVIDIA driver here?", file);
    return g;
  }
  g.nvml = true;
  const auto init = symbol<InitFn>(lib, "nvmlInit_v2");
  const auto shutdown = symbol<InitFn>(lib, "nvmlShutdown");
  const auto count = symbol<CountFn>(lib, "nvmlDeviceGetCount_v2");
  const auto handle = symbol<HandleFn>(lib, "nvmlDeviceGetHandleByIndex_v2");
  const auto error = symbol<ErrorFn>(lib, "nvmlErrorString");
  auto reasons = symbol<ReasonsFn>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!reasons) reasons = symbol<ReasonsFn>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");  // older drivers
  const auto name = symbol<NameFn>(lib, "nvmlDeviceGetName");
  const auto uuid = symbol<NameFn>(lib, "nvmlDeviceGetUUID");
  const auto ecc = symbol<EccFn>(lib, "nvmlDeviceGetTotalEccErrors");
  const auto pending = symbol<PendingFn>(lib, "nvmlDeviceGetRetiredPagesPendingStatus");
  const auto clock = symbol<ClockFn>(lib, "nvmlDeviceGetClockInfo");
  const auto max_clock = symbol<ClockFn>(lib, "nvmlDeviceGetMaxClockInfo");
  const auto why = [&](int rc) { return error ? std::string(error(rc)) : fmt::format("NVML error {}", rc); };
  unsigned n = 0;
  if (!init || !count || !handle) {
    g.error = fmt::format("{} lacks nvmlInit_v2, nvmlDeviceGetCount_v2 or nvmlDeviceGetHandleByIndex_v2", file);
  } else if (int rc = init(); rc != 0) {
    g.error = "nvmlInit failed: " + why(rc);
  } else {
    if (int c = count(&n); c != 0) g.error = "nvmlDeviceGetCount failed: " + why(c);
    for (unsigned i = 0; i < n && g.error.empty(); ++i) {
      GpuFigures::Device d;
      d.index = static_cast<int>(i);
      Device h = nullptr;
      if (int rc2 = handle(i, &h); rc2 != 0) {
        d.error = why(rc2);
        g.devices.push_back(d);
        continue;
      }
      char buf[96] = {};
      if (name && name(h, buf, sizeof buf) == 0) d.name = buf;
      char id[96] = {};
      if (uuid && uuid(h, id, sizeof id) == 0) d.uuid = id;
      unsigned long long v = 0;
      if (ecc && ecc(h, kUncorrected, kVolatile, &v) == 0) d.ecc_uncorrected = static_cast<long long>(v);
      int p = 0;
      if (pending && pending(h, &p) == 0) d.retired_pending = p != 0;
      if (reasons && reasons(h, &v) == 0) d.clock_events = v;
      unsigned c = 0;
      if (clock && clock(h, kSmClock, &c) == 0) d.sm_mhz = c;
      if (max_clock && max_clock(h, kSmClock, &c) == 0) d.sm_max_mhz = c;
      g.devices.push_back(d);
    }
    if (shutdown) shutdown();
  }
  g.count = static_cast<int>(n);
  ::dlclose(lib);
  return g;
}

}  // namespace ddp::launch::preflight
