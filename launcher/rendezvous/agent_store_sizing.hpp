// The agent store's limits for a job of up to `nodes_max` nodes (pure). Every node's launcher
// holds two connections (its requests and its abort watch), and the first round's come all at
// once: the store admits 2 x nodes_max + 64 connections and asks for a listen backlog of
// 2 x nodes_max, within the process's open-file limit (raised to the hard limit first) and
// net.core.somaxconn. What does not fit is a warning, not an error: an elastic MAX may be an
// upper bound the job never reaches, and a node past the cap is refused with a clear error
// rather than left waiting.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launch::rendezvous {

struct AgentStoreSizing {
  size_t max_connections = 0;
  int backlog = 0;
  std::vector<std::string> warnings;  // said once, when the store starts
};

// `open_files`: the process's soft open-file limit (SIZE_MAX: unlimited); `somaxconn`: the
// kernel's backlog cap (nullopt: unknown).
AgentStoreSizing size_agent_store(size_t nodes_max, size_t open_files, std::optional<size_t> somaxconn);

}  // namespace ddp::launch::rendezvous
