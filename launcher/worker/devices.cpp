#include "launcher/worker/devices.hpp"

#include <dlfcn.h>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"

namespace ddp::launch::worker {
namespace {

[[noreturn]] void device_error(const std::string& message) { throw LaunchError(exit_code::kBadDevices, message); }

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : ",") + i;
  return out;
}

// The devices the launcher can hand out, as CUDA_VISIBLE_DEVICES entries.
std::vector<std::string> visible_devices(const DeviceInputs& in) {
  std::optional<int> driver = in.driver_count ? in.driver_count() : std::nullopt;
  if (in.cuda_visible_devices) {
    auto listed = split_visible_devices(*in.cuda_visible_devices);
    if (driver && *driver < static_cast<int>(listed.size())) listed.resize(*driver);
    return listed;
  }
  std::vector<std::string> out;
  for (int i = 0; i < driver.value_or(0); ++i) out.push_back(std::to_string(i));
  return out;
}

// "only 2 GPUs are visible (CUDA_VISIBLE_DEVICES=3,5)" / "no GPU is visible (...)".
std::string describe_visible(const DeviceInputs& in, size_t count) {
  std::string where = in.cuda_visible_devices ? fmt::format(" (CUDA_VISIBLE_DEVICES={})", *in.cuda_visible_devices)
                                              : std::string(" (CUDA driver, CUDA_VISIBLE_DEVICES unset)");
  if (count == 0) return "no GPU is visible" + where;
  return fmt::format("only {} GPU{} visible{}", count, count == 1 ? " is" : "s are", where);
}

}  // namespace

std::optional<int> count_cuda_devices() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return std::nullopt;
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(::dlsym(lib, "cuInit"));
  auto count = reinterpret_cast<CountFn>(::dlsym(lib, "cuDeviceGetCount"));
  std::optional<int> result;
  if (init && count) {
    int n = 0;
    if (init(0) == 0 && count(&n) == 0) result = n;
    else result = 0;  // driver present, no usable device (e.g. CUDA_ERROR_NO_DEVICE)
  }
  ::dlclose(lib);
  return result;
}

std::vector<std::string> split_visible_devices(const std::string& value) {
  return split(value, ',', EmptyItems::kSkip);
}

DevicePlan plan_devices(const DeviceSpec& spec, const DeviceInputs& in) {
  using Kind = cli::NprocSpec::Kind;
  DevicePlan plan;
  const Kind kind = spec.nproc.kind;
  const bool gpu_requested = kind == Kind::kGpu || kind == Kind::kAuto || spec.devices || spec.virtual_local_rank;
  std::vector<std::string> selected;
  if (gpu_requested) {
    auto visible = visible_devices(in);
    if (spec.devices) {
      for (int index : *spec.devices) {
        if (index >= static_cast<int>(visible.size()))
          device_error(
              fmt::format("--devices names GPU {}, but {}; use indices into the "
                          "visible devices, counted from 0",
                          index, describe_visible(in, visible.size())));
        selected.push_back(visible[index]);
      }
    } else {
      selected = visible;
    }
  }
  const int gpus = static_cast<int>(selected.size());

  switch (kind) {
    case Kind::kCount: plan.nproc = spec.nproc.count; break;
    case Kind::kCpu: plan.nproc = std::max(1, in.cpu_count); break;
    case Kind::kGpu:
      if (gpus == 0)
        device_error(
            "--nproc-per-node=gpu found no CUDA device (no driver, or "
            "CUDA_VISIBLE_DEVICES hides them all); give a number of workers instead");
      plan.nproc = gpus;
      break;
    case Kind::kAuto: plan.nproc = gpus > 0 ? gpus : std::max(1, in.cpu_count); break;
  }
  plan.uses_gpus = kind == Kind::kGpu || (kind == Kind::kAuto && gpus > 0) || spec.devices || spec.virtual_local_rank;
  if (plan.uses_gpus && plan.nproc > gpus)
    device_error(fmt::format("{} workers asked for, but {}; ask for at most {} workers", plan.nproc,
                             spec.devices ? fmt::format("--devices selects only {} GPU{}", gpus, gpus == 1 ? "" : "s")
                                          : describe_visible(in, gpus),
                             gpus));

  plan.visible_devices.assign(plan.nproc, std::nullopt);
  if (spec.virtual_local_rank) {
    plan.local_rank_zero = true;
    for (int r = 0; r < plan.nproc; ++r) plan.visible_devices[r] = selected[r];
  } else if (spec.devices) {
    std::vector<std::string> used(selected.begin(), selected.begin() + plan.nproc);
    for (auto& v : plan.visible_devices) v = join(used);
  }
  return plan;
}

}  // namespace ddp::launch::worker
