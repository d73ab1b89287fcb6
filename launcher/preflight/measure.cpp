#include "launcher/preflight/measure.hpp"

#include "launcher/preflight/gpu_probe.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace ddp::launch::preflight {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kN = 64;  // 64x64 floats: three matrices fit in L1/L2, so the rate is the core's
constexpr double kFlopsPerProduct = 2.0 * kN * kN * kN;

// Products of two kN x kN matrices until `until`; returns how many.
long multiply_until(Clock::time_point until) {
  static thread_local std::array<float, kN * kN> a, b, c;
  for (int i = 0; i < kN * kN; ++i) {
    a[static_cast<size_t>(i)] = static_cast<float>(i % 7) * 0.5f;
    b[static_cast<size_t>(i)] = static_cast<float>(i % 5) * 0.25f;
  }
  long products = 0;
  do {
    c.fill(0);
    for (int i = 0; i < kN; ++i)
      for (int k = 0; k < kN; ++k) {
        const float aik = a[static_cast<size_t>(i * kN + k)];
        for (int j = 0; j < kN; ++j) c[static_cast<size_t>(i * kN + j)] += aik * b[static_cast<size_t>(k * kN + j)];
      }
    b[0] = c[static_cast<size_t>(products % (kN * kN))] * 1e-9f;  // a dependence: nothing is optimised away
    ++products;
  } while (Clock::now() < until);
  return products;
}

std::vector<Figures::Core> measure_cores(double cpu_ms) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (::sched_getaffinity(0, sizeof allowed, &allowed) != 0) return {};
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) cpus.push_back(cpu);
  std::vector<Figures::Core> cores(cpus.size());
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cpus.size(); ++i)
    threads.emplace_back([&, i] {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[i], &one);
      ::pthread_setaffinity_np(::pthread_self(), sizeof one, &one);
      ++ready;
      while (!go) std::this_thread::yield();
      const auto start = Clock::now();
      const long products = multiply_until(start + std::chrono::microseconds(static_cast<long>(cpu_ms * 1000)));
      const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
      cores[i] = {cpus[i], products * kFlopsPerProduct / seconds / 1e9};
    });
  while (ready < static_cast<int>(cpus.size())) std::this_thread::yield();
  go = true;  // every core at once: one another program holds shows
  for (auto& t : threads) t.join();
  return cores;
}

double mem_available_gib() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  while (in >> key >> kib) {
    if (key == "MemAvailable:") return kib / (1024.0 * 1024.0);
    in.ignore(256, '\n');
  }
  return 0;
}

Figures::Folder measure_folder(const std::string& role, const std::string& path) {
  Figures::Folder d{role, path, 0, ""};
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0) {
    d.write_error = std::strerror(errno);
    return d;
  }
  d.free_gib = static_cast<double>(s.f_bavail) * static_cast<double>(s.f_frsize) / (1024.0 * 1024.0 * 1024.0);
  const std::string probe = path + "/.ddp-launch-preflight-" + std::to_string(::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) {
    d.write_error = std::strerror(errno);
    return d;
  }
  const std::string block(4096, 'p');
  if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size()) || ::fsync(fd) != 0)
    d.write_error = std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return d;
}

}  // namespace

Figures measure(const MeasureSpec& spec) {
  Figures f;
  f.workers = spec.workers;
  f.gpus_needed = spec.gpus_needed;
  if (spec.gpus_needed > 0) f.gpus = probe_gpus();
  f.cores = measure_cores(spec.cpu_ms);
  f.mem_available_gib = mem_available_gib();
  for (const auto& [role, path] : spec.folders) f.folders.push_back(measure_folder(role, path));
  return f;
}

}  // namespace ddp::launch::preflight
