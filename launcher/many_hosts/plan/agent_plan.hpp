// What each host's agent of a many-host launch is told: the launching machine's parsed
// arguments (the user's own tokens, which the agent parses with the same parser: no flag
// is rebuilt or dropped), the forwarded environment, and its placement (node rank, node
// count, workers, slots, the rendezvous address when the launcher picks it), and the launching
// machine's PET_* flag defaults, which the agent parses with. One JSON line
// on the agent's stdin (`encode_agent_config`). Pure; decoding throws LaunchError(kUsage).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launcher/many_hosts/plan/resource_filter.hpp"

namespace ddp::launch::many_hosts::plan {

inline constexpr int kAgentConfigVersion = 1;

struct AgentPlacement {
  std::string host;  // as the host list names it
  int node_rank = 0;
  int nnodes = 1;
  int nnodes_min = 0, nnodes_max = 0;  // an elastic job's --nnodes MIN:MAX (0: a fixed node count, nnodes)
  std::string rdzv_endpoint;           // elastic, the launcher picking the store: c10d at the first host
  std::optional<int> nproc;            // workers on this host, when the launcher sets it
  std::vector<int> slots;              // a slot filter's selection ("": all slots); GPU indices
  std::string master_addr;             // "": the arguments' own (or their rendezvous endpoint)
  std::optional<int> master_port;      // set for a static rendezvous across hosts
  bool local = false;                  // the launching machine itself: started without ssh
};

struct AgentConfig {
  std::vector<std::string> args;           // the launcher's arguments (argv without argv[0])
  std::map<std::string, std::string> env;  // forwarded variables
  // The launching machine's PET_* (its flag defaults, never a worker's variables): the agent
  // parses `args` with these in place of its own host's PET_*.
  std::map<std::string, std::string> settings;
  std::string cwd;  // the launching shell's folder: the agent starts there
  AgentPlacement placement;
};

struct PlanInputs {
  bool nproc_given = false;                          // --nproc-per-node given: every host runs that many
  bool master_addr_given = false;                    // --master-addr given: the store is there
  std::string master_addr;                           // its value
  bool rdzv_endpoint_given = false;                  // c10d or etcd endpoint: the rendezvous is there
  std::optional<int> master_port;                    // --master-port; default 29500
  std::function<bool(const std::string&)> is_local;  // names the launching machine
  int nnodes_min = 0, nnodes_max = 0;                // --nnodes MIN:MAX with MIN < MAX (0: not elastic)
};

inline constexpr int kDefaultMasterPort = 29500;

// One placement per host in list order (node rank = position; an elastic job's ranks come
// from its rendezvous: c10d at the first host, or at --master-addr, on --master-port (29500),
// unless --rdzv-endpoint names one). Throws LaunchError(kUsage)
// when the first host would host the store under a name the others cannot reach
// (localhost), or when --nproc-per-node asks for more workers than a slot filter selects.
std::vector<AgentPlacement> plan_agents(const std::vector<SelectedHost>& hosts, const PlanInputs& in,
                                        std::optional<int> nproc_count);

std::string encode_agent_config(const AgentConfig& config);  // one line, '\n' included
AgentConfig decode_agent_config(const std::string& line);

// After the configuration, the launching machine may write one more line before it ends
// the agent's stdin (the end is the stop, with or without it): why the agent is stopped
// ("host gpu2 (node rank 1) was lost: ..."). Decoding a line that is no stop message gives
// nothing (a newer launching machine may say more); never throws.
std::string encode_stop_message(const std::string& reason);  // one line, '\n' included
std::optional<std::string> decode_stop_message(const std::string& line);

}  // namespace ddp::launch::many_hosts::plan
