#include "launcher/many_hosts/plan/agent_plan.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/host_port.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::many_hosts::plan {
namespace {

bool loopback_name(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

}  // namespace

std::vector<AgentPlacement> plan_agents(const std::vector<SelectedHost>& hosts, const PlanInputs& in,
                                        std::optional<int> nproc_count) {
  std::vector<AgentPlacement> out;
  const int n = static_cast<int>(hosts.size());
  const bool launcher_picks_store = !in.master_addr_given && !in.rdzv_endpoint_given && (n > 1 || in.nnodes_min > 0);
  if (launcher_picks_store && loopback_name(hosts[0].name))
    throw LaunchError(exit_code::kUsage,
                      fmt::format("the first host, '{}', hosts the job's store, and the other hosts cannot reach "
                                  "it by that name; list it by a name or address they reach, or pass "
                                  "--master-addr",
                                  hosts[0].name));
  for (int i = 0; i < n; ++i) {
    const SelectedHost& h = hosts[static_cast<size_t>(i)];
    AgentPlacement p;
    p.host = h.name;
    p.node_rank = i;
    p.nnodes = n;
    if (h.filtered) p.slots = h.selected;
    const int selected = static_cast<int>(h.selected.size());
    if (!in.nproc_given) {
      p.nproc = selected;
    } else if (nproc_count && h.filtered && *nproc_count > selected) {
      throw LaunchError(exit_code::kUsage,
                        fmt::format("--nproc-per-node {} asks for more workers than the {} slot(s) selected on "
                                    "host '{}'; select more slots or ask for fewer workers",
                                    *nproc_count, selected, h.name));
    }
    if (in.nnodes_min > 0) {  // elastic: a c10d rendezvous (or the user's)
      p.nnodes_min = in.nnodes_min;
      p.nnodes_max = in.nnodes_max;
      if (!in.rdzv_endpoint_given)
        p.rdzv_endpoint = format_host_port(in.master_addr_given ? in.master_addr : hosts[0].name,
                                           in.master_port.value_or(kDefaultMasterPort));
    } else {
      if (launcher_picks_store) p.master_addr = hosts[0].name;
      if (!in.rdzv_endpoint_given && n > 1) p.master_port = in.master_port.value_or(kDefaultMasterPort);
    }
    p.local = in.is_local && in.is_local(h.name);
    out.push_back(std::move(p));
  }
  return out;
}

std::string encode_agent_config(const AgentConfig& c) {
  nlohmann::json j;
  j["version"] = kAgentConfigVersion;
  j["args"] = c.args;
  j["env"] = c.env;
  j["settings"] = c.settings;
  j["cwd"] = c.cwd;
  const AgentPlacement& p = c.placement;
  nlohmann::json pj{{"host", p.host},   {"node_rank", p.node_rank},     {"nnodes", p.nnodes},
                    {"slots", p.slots}, {"master_addr", p.master_addr}, {"local", p.local}};
  if (p.nproc) pj["nproc"] = *p.nproc;
  if (p.master_port) pj["master_port"] = *p.master_port;
  if (p.nnodes_min > 0) pj["nnodes_range"] = {p.nnodes_min, p.nnodes_max};
  if (!p.rdzv_endpoint.empty()) pj["rdzv_endpoint"] = p.rdzv_endpoint;
  j["placement"] = pj;
  return j.dump() + "\n";
}

AgentConfig decode_agent_config(const std::string& line) {
  try {
    const nlohmann::json j = nlohmann::json::parse(line);
    if (j.at("version").get<int>() != kAgentConfigVersion)
      throw LaunchError(exit_code::kUsage,
                        fmt::format("the launching machine sent an agent configuration of version {}, this "
                                    "ddp-launch reads version {}; run the same ddp-launch version on every host",
                                    j.at("version").get<int>(), kAgentConfigVersion));
    AgentConfig c;
    c.args = j.at("args").get<std::vector<std::string>>();
    c.env = j.at("env").get<std::map<std::string, std::string>>();
    c.settings = j.at("settings").get<std::map<std::string, std::string>>();
    c.cwd = j.at("cwd").get<std::string>();
    const auto& pj = j.at("placement");
    AgentPlacement& p = c.placement;
    p.host = pj.at("host").get<std::string>();
    p.node_rank = pj.at("node_rank").get<int>();
    p.nnodes = pj.at("nnodes").get<int>();
    p.slots = pj.at("slots").get<std::vector<int>>();
    p.master_addr = pj.at("master_addr").get<std::string>();
    p.local = pj.at("local").get<bool>();
    if (pj.contains("nproc")) p.nproc = pj.at("nproc").get<int>();
    if (pj.contains("master_port")) p.master_port = pj.at("master_port").get<int>();
    if (pj.contains("nnodes_range")) {
      p.nnodes_min = pj.at("nnodes_range").at(0).get<int>();
      p.nnodes_max = pj.at("nnodes_range").at(1).get<int>();
    }
    if (pj.contains("rdzv_endpoint")) p.rdzv_endpoint = pj.at("rdzv_endpoint").get<std::string>();
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw LaunchError(exit_code::kUsage,
                      fmt::format("the agent configuration on stdin is not one this ddp-launch reads ({}); an "
                                  "agent is started by `ddp-launch --hostfile` on the launching machine, with the "
                                  "same ddp-launch version on every host",
                                  e.what()));
  }
}

std::string encode_stop_message(const std::string& reason) { return nlohmann::json{{"stop", reason}}.dump() + "\n"; }

std::optional<std::string> decode_stop_message(const std::string& line) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("stop") || !j["stop"].is_string()) return std::nullopt;
  return j["stop"].get<std::string>();
}

}  // namespace ddp::launch::many_hosts::plan
