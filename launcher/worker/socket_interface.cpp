

#include "launcher/console/notice.hpp"
#include "launcher/os/process.hpp"
#include "launcher/worker/socket_interface.hpp"
#include <algorithm>
#include <fmt/format.h>

namespace ddp::launch::worker {
namespace {

bool user_set(const cli::Environment& env, const char* name) {
  const auto value = cli::lookup(env, name);
  return value && !value->empty();
}

std::string without_scope(std::string address) {
  if (const auto percent = address.find('%'); percent != std::string::npos) address.erase(percent);
  return address;
}

// "10.0.0.2", or "gpu1 = 10.0.0.2" when the node is known by a name.
std::string node_text(const SocketInterfaceInputs& in, const std::string& address) {
  return in.node_addr == address ? address : fmt::format("{} = {}", in.node_addr, address);
}

}  // namespace

bool is_loopback_text(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1" || host.rfind("::ffff:127.", 0) == 0;
}

bool socket_interface_wanted(const std::string& node_addr, const std::string& job_host, const cli::Environment& env) {
  if (user_set(env, kGlooSocketIfname) && user_set(env, kNcclSocketIfname)) return false;
  return !is_loopback_text(job_host) && !node_addr.empty() && !is_loopback_text(node_addr);
}

SocketInterfacePlan plan_socket_interface(const SocketInterfaceInputs& in, const cli::Environment& env) {
  SocketInterfacePlan plan;
  if (!socket_interface_wanted(in.node_addr, in.job_host, env)) return plan;
  const bool gloo_given = user_set(env, kGlooSocketIfname), nccl_given = user_set(env, kNcclSocketIfname);
  for (const std::string& address : in.node_addresses) {
    if (is_loopback_text(address)) continue;
    const auto held = std::find_if(in.interfaces.begin(), in.interfaces.end(), [&](const os::InterfaceAddress& i) {
      return without_scope(i.address) == without_scope(address);
    });
    if (held == in.interfaces.end()) continue;
    plan.interface = held->name;
    plan.address = without_scope(address);
    break;
  }
  if (plan.interface.empty()) return plan;
  if (!gloo_given) plan.variables.emplace_back(kGlooSocketIfname, plan.interface);
  if (!nccl_given) plan.variables.emplace_back(kNcclSocketIfname, "=" + plan.interface);
  const std::string what = gloo_given   ? fmt::format("{} set (your {} kept)", kNcclSocketIfname, kGlooSocketIfname)
                           : nccl_given ? fmt::format("{} set (your {} kept)", kGlooSocketIfname, kNcclSocketIfname)
                                        : fmt::format("{}/{} set", kGlooSocketIfname, kNcclSocketIfname);
  plan.notices.push_back(fmt::format("workers use interface {} ({}, this node's address in the rendezvous); {}",
                                     plan.interface, node_text(in, plan.address), what));
  // gloo's default device takes the first address the host name resolves to (loopback when it
  // does not resolve): the other nodes would be told a loopback address but for the variable.
  if (gloo_given) return plan;
  const bool unresolved = in.host_name_addresses.empty();
  if (!unresolved && !is_loopback_text(in.host_name_addresses.front())) return plan;
  const std::string resolves =
      unresolved ? "does not resolve here" : fmt::format("resolves to {} (loopback)", in.host_name_addresses.front());
  plan.notices.push_back(
      fmt::format("warning: this host's name {} {} while the job reaches this node at {}: gloo's default would give "
                  "the other nodes a loopback address, so the launcher set {}={}; if that is the wrong interface, set "
                  "{} and {} yourself (a host list forwards them to every host), or map the name to {} in /etc/hosts",
                  in.host_name, resolves, plan.address, kGlooSocketIfname, plan.interface, kGlooSocketIfname,
                  kNcclSocketIfname, plan.address));
  return plan;
}

cli::Environment socket_interface_environment(const cli::Environment& env, const std::string& node_addr,
                                              const std::string& job_host) {
  SocketInterfaceInputs in;
  in.node_addr = node_addr;
  in.job_host = job_host;
  if (!socket_interface_wanted(node_addr, job_host, env)) return env;  // before any lookup
  in.node_addresses = os::resolve_addresses(node_addr);
  in.interfaces = os::interface_addresses();
  in.host_name = os::host_name();
  in.host_name_addresses = os::resolve_addresses(in.host_name);
  const SocketInterfacePlan plan = plan_socket_interface(in, env);
  cli::Environment out = env;
  for (const auto& [name, value] : plan.variables) out[name] = value;
  for (const std::string& line : plan.notices) console::launcher_notice(line);
  return out;
}

}  // namespace ddp::launch::worker
