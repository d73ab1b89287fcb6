// --numa-binding: the CPUs each worker is bound to, near its GPU (torch's AffinityMode node
// and socket). numa_binding_cpus is pure; read_numa_topology and gpu_numa_node read /sys
// (and the CUDA driver, loaded with dlopen, for a GPU's PCI address); plan_numa_binding
// puts them together and throws LaunchError(kBadDevices) where it cannot bind.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::launch::worker {

// "0-3,8,10-11" (a /sys cpulist) -> {0,1,2,3,8,10,11}; nullopt if malformed.
std::optional<std::vector<int>> parse_cpu_list(std::string_view text);
// {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::vector<int>& cpus);

struct NumaTopology {
  std::map<int, std::vector<int>> node_cpus;  // NUMA node -> its CPUs
  std::map<int, int> node_socket;             // NUMA node -> physical package id
};

// mode "node": the CPUs of gpu_node; "socket": those of every node on gpu_node's socket;
// intersected with `allowed` (the launcher's own affinity). Empty: nothing to bind to.
std::vector<int> numa_binding_cpus(const std::string& mode, int gpu_node, const NumaTopology& topology,
                                   const std::vector<int>& allowed);

// /sys/devices/system/node/node*/cpulist and each node's first CPU's physical_package_id.
NumaTopology read_numa_topology();

// The NUMA node of CUDA device `ordinal` (as the launcher sees them): its PCI address from the
// driver, then /sys/bus/pci/devices/ADDR/numa_node (-1, one node: 0). nullopt: no driver,
// no such device or no such file.
std::optional<int> gpu_numa_node(int ordinal);

// Per local rank, the CPUs to bind to: the GPU of local rank r is CUDA ordinal gpu_ordinals[r].
// Throws LaunchError(kBadDevices) naming what is missing (no GPU, no NUMA information).
std::vector<std::vector<int>> plan_numa_binding(const std::string& mode, const std::vector<int>& gpu_ordinals);

}  // namespace ddp::launch::worker
