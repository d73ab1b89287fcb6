// Which network interface a node's workers open their gloo and NCCL sockets on: the one that
// holds the address this node is known by in the rendezvous, set as GLOO_SOCKET_IFNAME and
// NCCL_SOCKET_IFNAME unless the user set them. Without it gloo takes the address its host
// name resolves to, which is 127.0.0.1 where /etc/hosts maps the name to loopback (many cloud
// images and containers), and the other nodes' workers cannot connect.
// plan_socket_interface is pure (what the machine says comes in as values);
// socket_interface_environment gathers those values here (os/interfaces) and prints the lines.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "launcher/cli/environment.hpp"
#include "launcher/os/interfaces.hpp"

namespace ddp::launch::worker {

struct SocketInterfaceInputs {
  std::string node_addr;                         // this node's address in the rendezvous: a name or an address
  std::vector<std::string> node_addresses;       // what node_addr resolves to here, in the resolver's order
  std::string job_host;                          // the rendezvous' host ("" for etcd): loopback = one machine
  std::vector<os::InterfaceAddress> interfaces;  // this machine's (os::interface_addresses)
  std::string host_name;                         // this machine's host name
  std::vector<std::string> host_name_addresses;  // what it resolves to here, in the resolver's order
};

struct SocketInterfacePlan {
  std::string interface;                                       // "": nothing is set, nothing said
  std::string address;                                         // the address of node_addr that interface holds
  std::vector<std::pair<std::string, std::string>> variables;  // what the workers get, in this order
  std::vector<std::string> notices;  // the start line, then a warning when the host name is loopback
};

// The variables the user may set to choose the interfaces themselves; each one set (non-empty)
// in env is kept, and when both are, nothing is planned. NCCL's value is "=IF" (that name
// exactly: NCCL takes a bare name as a prefix, so eth1 would also match eth10).
inline constexpr const char* kGlooSocketIfname = "GLOO_SOCKET_IFNAME";
inline constexpr const char* kNcclSocketIfname = "NCCL_SOCKET_IFNAME";

// False (nothing to look up, nothing to set) when the user set both variables, the job is on one
// machine (job_host loopback) or the node's address is loopback.
bool socket_interface_wanted(const std::string& node_addr, const std::string& job_host, const cli::Environment& env);

// Nothing when !socket_interface_wanted, when node_addr resolves only to loopback or not at all,
// or when no interface here holds it (NAT, a load balancer: the workers then get what they would
// without the launcher). Otherwise the first address (in node_addresses' order) that an
// interface holds picks the interface. The warning comes when the host name resolves to
// loopback first, or not at all (gloo then falls back to loopback too), and GLOO_SOCKET_IFNAME
// is the launcher's.
SocketInterfacePlan plan_socket_interface(const SocketInterfaceInputs& in, const cli::Environment& env);

// True for "localhost", 127.0.0.0/8, ::1 and ::ffff:127.x (as inet_ntop writes them).
bool is_loopback_text(const std::string& host);

// env plus the plan's variables for this node, whose rendezvous address is node_addr (the job's
// at job_host); prints the plan's lines (launcher_notice). Looks up this machine's interfaces
// and names: blocking, as a name lookup is.
cli::Environment socket_interface_environment(const cli::Environment& env, const std::string& node_addr,
                                              const std::string& job_host);

}  // namespace ddp::launch::worker
