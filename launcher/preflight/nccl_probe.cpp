#include "launcher/preflight/nccl_probe.hpp"

#include <dlfcn.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <vector>

namespace ddp::launch::preflight {
namespace {

// The CUDA driver API and NCCL's C interface, as far as this check uses them (cuda.h, nccl.h:
// 0 is CUDA_SUCCESS and ncclSuccess).
using CuInit = int (*)(unsigned);
using CuCount = int (*)(int*);
using CuDeviceGet = int (*)(int*, int);
using CuRetain = int (*)(void**, int);
using CuRelease = int (*)(int);
using CuSetCurrent = int (*)(void*);
using CuAlloc = int (*)(unsigned long long*, size_t);
using CuFree = int (*)(unsigned long long);
using CuMemset32 = int (*)(unsigned long long, unsigned, size_t);
using CuCopyToHost = int (*)(void*, unsigned long long, size_t);
using CuStreamCreate = int (*)(void**, unsigned);
using CuStreamSync = int (*)(void*);
using CuStreamDestroy = int (*)(void*);
using CuErrorString = int (*)(int, const char**);
using NcclVersion = int (*)(int*);
using NcclInitAll = int (*)(void**, int, const int*);
using NcclAllReduce = int (*)(const void*, void*, size_t, int, int, void*, void*);
using NcclGroup = int (*)();
using NcclDestroy = int (*)(void*);
using NcclErrorString = const char* (*)(int);

constexpr int kNcclFloat32 = 7;
constexpr int kNcclSum = 0;
constexpr unsigned kStreamNonBlocking = 1;
constexpr int kUntimed = 2;

template <typename F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(::dlsym(lib, name));
}

// The first of `files` that loads, and its name; nullptr and every file tried when none does.
std::pair<void*, std::string> load_first(const std::vector<std::string>& files) {
  std::string tried;
  for (const auto& file : files) {
    if (void* lib = ::dlopen(file.c_str(), RTLD_NOW | RTLD_GLOBAL)) return {lib, file};
    tried += (tried.empty() ? "" : ", ") + file;
  }
  return {nullptr, tried};
}

std::vector<std::string> candidates(const char* env_var, std::vector<std::string> defaults) {
  const char* named = std::getenv(env_var);
  if (named && *named) return {named};
  return defaults;
}

struct Cuda {
  CuInit init = nullptr;
  CuCount count = nullptr;
  CuDeviceGet device = nullptr;
  CuRetain retain = nullptr;
  CuRelease release = nullptr;
  CuSetCurrent set_current = nullptr;
  CuAlloc alloc = nullptr;
  CuFree free = nullptr;
  CuMemset32 memset32 = nullptr;
  CuCopyToHost to_host = nullptr;
  CuStreamCreate stream_create = nullptr;
  CuStreamSync stream_sync = nullptr;
  CuStreamDestroy stream_destroy = nullptr;
  CuErrorString error_string = nullptr;

  explicit Cuda(void* lib)
      : init(symbol<CuInit>(lib, "cuInit")),
        count(symbol<CuCount>(lib, "cuDeviceGetCount")),
        device(symbol<CuDeviceGet>(lib, "cuDeviceGet")),
        retain(symbol<CuRetain>(lib, "cuDevicePrimaryCtxRetain")),
        release(symbol<CuRelease>(lib, "cuDevicePrimaryCtxRelease_v2")),
        set_current(symbol<CuSetCurrent>(lib, "cuCtxSetCurrent")),
        alloc(symbol<CuAlloc>(lib, "cuMemAlloc_v2")),
        free(symbol<CuFree>(lib, "cuMemFree_v2")),
        memset32(symbol<CuMemset32>(lib, "cuMemsetD32_v2")),
        to_host(symbol<CuCopyToHost>(lib, "cuMemcpyDtoH_v2")),
        stream_create(symbol<CuStreamCreate>(lib, "cuStreamCreate")),
        stream_sync(symbol<CuStreamSync>(lib, "cuStreamSynchronize")),
        stream_destroy(symbol<CuStreamDestroy>(lib, "cuStreamDestroy_v2")),
        error_string(symbol<CuErrorString>(lib, "cuGetErrorString")) {}
  bool complete() const {
    return init && count && device && retain && release && set_current && alloc && free && memset32 && to_host &&
           stream_create && stream_sync && stream_destroy;
  }
  std::string why(const char* call, int rc) const {
    const char* text = nullptr;
    if (error_string) error_string(rc, &text);
    return fmt::format("{}: {}", call, text ? text : fmt::format("CUDA error {}", rc));
  }
};

struct Nccl {
  NcclVersion version = nullptr;
  NcclInitAll init_all = nullptr;
  NcclAllReduce all_reduce = nullptr;
  NcclGroup group_start = nullptr;
  NcclGroup group_end = nullptr;
  NcclDestroy destroy = nullptr;
  NcclErrorString error_string = nullptr;

  explicit Nccl(void* lib)
      : version(symbol<NcclVersion>(lib, "ncclGetVersion")),
        init_all(symbol<NcclInitAll>(lib, "ncclCommInitAll")),
        all_reduce(symbol<NcclAllReduce>(lib, "ncclAllReduce")),
        group_start(symbol<NcclGroup>(lib, "ncclGroupStart")),
        group_end(symbol<NcclGroup>(lib, "ncclGroupEnd")),
        destroy(symbol<NcclDestroy>(lib, "ncclCommDestroy")),
        error_string(symbol<NcclErrorString>(lib, "ncclGetErrorString")) {}
  bool complete() const { return init_all && all_reduce && group_start && group_end && destroy; }
  std::string why(const char* call, int rc) const {
    return fmt::format("{}: {}", call, error_string ? error_string(rc) : fmt::format("NCCL error {}", rc));
  }
};

// The GPUs' buffers, streams and communicators; everything made is released on destruction.
class AllReduce {
 public:
  AllReduce(const Cuda& cuda, const Nccl& nccl) : cuda_(cuda), nccl_(nccl) {}
  AllReduce(const AllReduce&) = delete;
  AllReduce& operator=(const AllReduce&) = delete;
  ~AllReduce() {
    for (void* comm : comms_)
      if (comm) nccl_.destroy(comm);
    for (size_t i = 0; i < contexts_.size(); ++i) {
      cuda_.set_current(contexts_[i]);
      if (i < streams_.size()) cuda_.stream_destroy(streams_[i]);
      if (i < buffers_.size()) cuda_.free(buffers_[i]);
      cuda_.release(devices_[i]);
    }
  }

  // "" or what failed.
  std::string set_up(int gpus, size_t floats) {
    floats_ = floats;
    for (int i = 0; i < gpus; ++i) {
      int device = 0;
      if (int rc = cuda_.device(&device, i)) return cuda_.why("cuDeviceGet", rc);
      void* context = nullptr;
      if (int rc = cuda_.retain(&context, device)) return cuda_.why("cuDevicePrimaryCtxRetain", rc);
      devices_.push_back(device), contexts_.push_back(context);
      if (int rc = cuda_.set_current(context)) return cuda_.why("cuCtxSetCurrent", rc);
      unsigned long long buffer = 0;
      if (int rc = cuda_.alloc(&buffer, floats * sizeof(float))) return cuda_.why("cuMemAlloc", rc);
      buffers_.push_back(buffer);
      if (int rc = cuda_.memset32(buffer, 0x3f800000u, floats)) return cuda_.why("cuMemsetD32", rc);  // 1.0f
      void* stream = nullptr;
      if (int rc = cuda_.stream_create(&stream, kStreamNonBlocking)) return cuda_.why("cuStreamCreate", rc);
      streams_.push_back(stream);
    }
    comms_.assign(static_cast<size_t>(gpus), nullptr);
    std::vector<int> list(static_cast<size_t>(gpus));
    for (int i = 0; i < gpus; ++i) list[static_cast<size_t>(i)] = i;
    if (int rc = nccl_.init_all(comms_.data(), gpus, list.data())) {
      comms_.clear();
      return nccl_.why("ncclCommInitAll", rc);
    }
    return "";
  }

  // One in-place all-reduce on every GPU, waited for; "" or what failed.
  std::string run() {
    if (int rc = nccl_.group_start()) return nccl_.why("ncclGroupStart", rc);
    for (size_t i = 0; i < comms_.size(); ++i) {
      void* data = reinterpret_cast<void*>(buffers_[i]);
      if (int rc = nccl_.all_reduce(data, data, floats_, kNcclFloat32, kNcclSum, comms_[i], streams_[i])) {
        nccl_.group_end();
        return nccl_.why("ncclAllReduce", rc);
      }
    }
    if (int rc = nccl_.group_end()) return nccl_.why("ncclGroupEnd", rc);
    for (size_t i = 0; i < streams_.size(); ++i) {
      cuda_.set_current(contexts_[i]);
      if (int rc = cuda_.stream_sync(streams_[i])) return cuda_.why("cuStreamSynchronize", rc);
    }
    return "";
  }

  // Every GPU's first and last float after `rounds` all-reduces of ones: gpus^rounds; "" or
  // the first one that differs.
  std::string check(int rounds) {
    const double want = std::pow(static_cast<double>(buffers_.size()), rounds);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      cuda_.set_current(contexts_[i]);
      for (size_t at : {size_t{0}, floats_ - 1}) {
        float got = 0;
        if (int rc = cuda_.to_host(&got, buffers_[i] + at * sizeof(float), sizeof got))
          return cuda_.why("cuMemcpyDtoH", rc);
        if (std::abs(got - want) > 1e-5 * want)
          return fmt::format("the sum is wrong: GPU {} holds {} at float {} after {} all-reduces of ones, not {}", i,
                             got, at, rounds, want);
      }
    }
    return "";
  }

 private:
  const Cuda& cuda_;
  const Nccl& nccl_;
  size_t floats_ = 0;
  std::vector<int> devices_;
  std::vector<void*> contexts_;
  std::vector<unsigned long long> buffers_;
  std::vector<void*> streams_;
  std::vector<void*> comms_;
};

// Runs the all-reduces into f; "" or what failed.
std::string measure(const Cuda& cuda, const Nccl& nccl, NcclFigures& f) {
  if (int rc = cuda.init(0)) return cuda.why("cuInit", rc);
  int visible = 0;
  if (int rc = cuda.count(&visible)) return cuda.why("cuDeviceGetCount", rc);
  if (visible < f.gpus)
    return fmt::format("CUDA sees {} GPU{}; this node's workers use {}", visible, visible == 1 ? "" : "s", f.gpus);
  const auto floats = std::max<size_t>(1, static_cast<size_t>(f.mib * 1024 * 1024 / sizeof(float)));
  AllReduce job(cuda, nccl);
  if (std::string e = job.set_up(f.gpus, floats); !e.empty()) return e;
  for (int i = 0; i < kUntimed; ++i)
    if (std::string e = job.run(); !e.empty()) return e;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kNcclTimedIterations; ++i)
    if (std::string e = job.run(); !e.empty()) return e;
  f.iterations = kNcclTimedIterations;
  f.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / f.iterations;
  const double bytes = static_cast<double>(floats * sizeof(float));
  f.algbw_gbps = f.seconds > 0 ? bytes / f.seconds / 1e9 : 0;
  f.busbw_gbps = f.algbw_gbps * 2.0 * (f.gpus - 1) / f.gpus;
  return job.check(kUntimed + kNcclTimedIterations);
}

}  // namespace

NcclFigures run_nccl_allreduce(int gpus, double mib) {
  NcclFigures f;
  f.gpus = gpus;
  f.mib = mib;
  const auto [cuda_lib, cuda_file] = load_first(candidates(kCudaLibraryEnvVar, {"libcuda.so.1"}));
  if (!cuda_lib) {
    f.error = fmt::format("cannot load the CUDA driver ({}): no NVIDIA driver here?", cuda_file);
    return f;
  }
  const auto [nccl_lib, nccl_file] = load_first(candidates(
      kNcclLibraryEnvVar, {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2", "/usr/local/cuda/lib/libnccl.so.2"}));
  if (!nccl_lib) {
    f.error =
        fmt::format("cannot load NCCL ({}): set {} to the libnccl.so.2 the job uses", nccl_file, kNcclLibraryEnvVar);
    return f;
  }
  const Cuda cuda(cuda_lib);
  const Nccl nccl(nccl_lib);
  if (!cuda.complete() || !nccl.complete()) {
    f.error = fmt::format("{} or {} lacks a function this check calls", cuda_file, nccl_file);
    return f;
  }
  f.loaded = true;
  int v = 0;
  if (nccl.version && nccl.version(&v) == 0)  // 22707 is 2.27.7; before 2.9, 2907 was 2.9.7
    f.version = v >= 10000 ? fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
                           : fmt::format("{}.{}.{}", v / 1000, v / 100 % 10, v % 100);
  f.error = measure(cuda, nccl, f);
  return f;  // the libraries stay loaded: NCCL's threads may outlive its communicators
}

std::string nccl_figures_json(const NcclFigures& f) {
  return nlohmann::json{{"loaded", f.loaded},
                        {"error", f.error},
                        {"version", f.version},
                        {"gpus", f.gpus},
                        {"mib", f.mib},
                        {"iterations", f.iterations},
                        {"seconds", f.seconds},
                        {"algbw_gbps", f.algbw_gbps},
                        {"busbw_gbps", f.busbw_gbps}}
      .dump();
}

NcclFigures parse_nccl_figures(const std::string& line) {
  NcclFigures f;
  try {
    const auto j = nlohmann::json::parse(line);
    f.loaded = j.at("loaded").get<bool>();
    f.error = j.at("error").get<std::string>();
    f.version = j.at("version").get<std::string>();
    f.gpus = j.at("gpus").get<int>();
    f.mib = j.at("mib").get<double>();
    f.iterations = j.at("iterations").get<int>();
    f.seconds = j.at("seconds").get<double>();
    f.algbw_gbps = j.at("algbw_gbps").get<double>();
    f.busbw_gbps = j.at("busbw_gbps").get<double>();
  } catch (const nlohmann::json::exception&) {
    f = NcclFigures{};
    f.loaded = true;  // the probe ran and said something else: a failure, not a missing library
    f.error = fmt::format("the probe's output is not its figures: '{}'", line.substr(0, 200));
  }
  return f;
}

}  // namespace ddp::launch::preflight
