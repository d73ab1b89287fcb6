#include "launcher/worker/numa_binding.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/base/text.hpp"
#include "launcher/os/process.hpp"

namespace ddp::launch::worker {
namespace {

// Blanks and line ends off both sides (/sys files end in '\n').
std::string strip(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  return std::string(s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1));
}

std::optional<std::string> read_small_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return strip(text);
}

std::optional<int> read_int_file(const std::string& path) {
  auto text = read_small_file(path);
  if (!text || text->empty()) return std::nullopt;
  try {
    return std::stoi(*text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The PCI address of CUDA device `ordinal` ("0000:3b:00.0", lower case), from the driver.
std::optional<std::string> gpu_pci_address(int ordinal) {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return std::nullopt;
  using InitFn = int (*)(unsigned);
  using GetFn = int (*)(int*, int);
  using BusIdFn = int (*)(char*, int, int);
  auto init = reinterpret_cast<InitFn>(::dlsym(lib, "cuInit"));
  auto get = reinterpret_cast<GetFn>(::dlsym(lib, "cuDeviceGet"));
  auto bus_id = reinterpret_cast<BusIdFn>(::dlsym(lib, "cuDeviceGetPCIBusId"));
  std::optional<std::string> out;
  int device = 0;
  char buffer[64] = {};
  if (init && get && bus_id && init(0) == 0 && get(&device, ordinal) == 0 &&
      bus_id(buffer, sizeof buffer, device) == 0) {
    std::string address = buffer;
    for (char& c : address) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out = address;
  }
  ::dlclose(lib);
  return out;
}

}  // namespace

std::optional<std::vector<int>> parse_cpu_list(std::string_view text) {
  std::vector<int> out;
  for (const std::string& raw : split(strip(text), ',', EmptyItems::kSkip)) {
    auto range = split(strip(raw), '-');
    if (range.size() > 2) return std::nullopt;
    auto lo = parse_natural(range[0]);
    auto hi = parse_natural(range.back());
    if (!lo || !hi || *lo > *hi || *hi > 1 << 20) return std::nullopt;
    for (auto cpu = *lo; cpu <= *hi; ++cpu) out.push_back(static_cast<int>(cpu));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string format_cpu_list(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    out += (out.empty() ? "" : ",") + (i == j ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j + 1;
  }
  return out;
}

std::vector<int> numa_binding_cpus(const std::string& mode, int gpu_node, const NumaTopology& topology,
                                   const std::vector<int>& allowed) {
  std::set<int> wanted;
  auto add_node = [&](int node) {
    if (auto it = topology.node_cpus.find(node); it != topology.node_cpus.end())
      wanted.insert(it->second.begin(), it->second.end());
  };
  if (mode == "socket" && topology.node_socket.count(gpu_node)) {
    const int socket = topology.node_socket.at(gpu_node);
    for (const auto& [node, s] : topology.node_socket)
      if (s == socket) add_node(node);
  } else {
    add_node(gpu_node);
  }
  std::vector<int> out;
  for (int cpu : allowed)
    if (wanted.count(cpu)) out.push_back(cpu);
  return out;
}

NumaTopology read_numa_topology() {
  namespace fs = std::filesystem;
  NumaTopology t;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/devices/system/node", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("node", 0) != 0) continue;
    auto node = parse_natural(name.substr(4));
    auto cpus = read_small_file(entry.path().string() + "/cpulist");
    if (!node || !cpus) continue;
    auto list = parse_cpu_list(*cpus);
    if (!list || list->empty()) continue;  // a node with memory only
    t.node_cpus[static_cast<int>(*node)] = *list;
    if (auto socket =
            read_int_file(fmt::format("/sys/devices/system/cpu/cpu{}/topology/physical_package_id", list->front())))
      t.node_socket[static_cast<int>(*node)] = *socket;
  }
  return t;
}

std::optional<int> gpu_numa_node(int ordinal) {
  auto address = gpu_pci_address(ordinal);
  if (!address) return std::nullopt;
  auto node = read_int_file("/sys/bus/pci/devices/" + *address + "/numa_node");
  if (!node) return std::nullopt;
  return std::max(*node, 0);  // -1: the machine has one NUMA node
}

std::vector<std::vector<int>> plan_numa_binding(const std::string& mode, const std::vector<int>& gpu_ordinals) {
  const NumaTopology topology = read_numa_topology();
  if (topology.node_cpus.empty())
    throw LaunchError(exit_code::kBadDevices,
                      fmt::format("--numa-binding={}: this machine shows no NUMA nodes with CPUs under "
                                  "/sys/devices/system/node; drop --numa-binding",
                                  mode));
  const std::vector<int> allowed = os::allowed_cpus();
  std::vector<std::vector<int>> out;
  for (size_t rank = 0; rank < gpu_ordinals.size(); ++rank) {
    auto node = gpu_numa_node(gpu_ordinals[rank]);
    if (!node)
      throw LaunchError(
          exit_code::kBadDevices,
          fmt::format("--numa-binding={}: cannot find the NUMA node of local rank {}'s GPU (CUDA "
                      "device {}): {}; drop --numa-binding",
                      mode, rank, gpu_ordinals[rank],
                      gpu_pci_address(gpu_ordinals[rank]) ? "its PCI device has no numa_node in /sys"
                                                          : "the machine has no such NVIDIA GPU (or no CUDA driver)"));
    auto cpus = numa_binding_cpus(mode, *node, topology, allowed);
    if (cpus.empty())
      throw LaunchError(exit_code::kBadDevices,
                        fmt::format("--numa-binding={}: none of the CPUs near local rank {}'s GPU (NUMA node {}) "
                                    "is allowed to this launcher (taskset/cgroup); drop --numa-binding",
                                    mode, rank, *node));
    out.push_back(std::move(cpus));
  }
  return out;
}

}  // namespace ddp::launch::worker
