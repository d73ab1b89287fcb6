#include "launcher/rendezvous/agent_store_sizing.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "launcher/net/open_files.hpp"

namespace ddp::launch::rendezvous {

AgentStoreSizing size_agent_store(size_t nodes_max, size_t open_files, std::optional<size_t> somaxconn) {
  AgentStoreSizing s;
  const size_t connections = 2 * nodes_max;
  const size_t room = open_files > net::kReservedFiles ? open_files - net::kReservedFiles : 0;
  s.max_connections = std::max<size_t>(1, std::min(connections + 64, room));
  s.backlog = static_cast<int>(std::min<size_t>(std::max<size_t>(connections, 128), std::numeric_limits<int>::max()));
  if (room < connections)
    s.warnings.push_back(fmt::format(
        "the agent store can hold {} connections (ulimit -n {}; {} kept for the launcher itself) and every "
        "node's launcher opens two: it holds {} nodes, more are refused; for --nnodes up to {}, raise the hard "
        "open-file limit (ulimit -Hn, systemd LimitNOFILE=, docker --ulimit nofile=) to at least {}",
        room, open_files, net::kReservedFiles, room / 2, nodes_max, connections + net::kReservedFiles));
  const std::string what =
      fmt::format("connections that {} nodes open to the agent store at the first round", nodes_max);
  if (std::string w = net::backlog_warning(somaxconn, connections, what); !w.empty())
    s.warnings.push_back(std::move(w));
  return s;
}

}  // namespace ddp::launch::rendezvous
