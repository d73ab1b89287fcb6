// The workers' store the launcher hosts (launcher/c10d's server): bound and listening
// before any worker of the attempt starts, at the MASTER_PORT the attempt exports, its
// refusals and protocol errors logged as launcher notices. Whoever holds the server stops it
// (resets the pointer) only once the attempt's workers are gone. Blocking but instant.
//
// Sized by the job (docs/store.md, "Jobs of many ranks"): every rank connects once (a torch
// 1.13 rank twice: its watch connection), all at once, so the store admits 2 x ranks + 64
// connections and asks for a listen backlog of the ranks, within what the process's
// open-file limit (raised to the hard limit) and net.core.somaxconn allow.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/c10d/server.hpp"
#include "launcher/net/open_files.hpp"

namespace ddp::launch::node {

// The store's limits for a job of `ranks` workers on a process that may open `open_files`
// files (SIZE_MAX: unlimited), `somaxconn` the kernel's backlog cap (nullopt: unknown). Pure.
struct WorkerStoreSizing {
  size_t max_connections = 0;
  int backlog = 0;
  std::string error;                  // the job cannot fit: what and how much, what to do
  std::vector<std::string> warnings;  // it fits, but some clients may wait or be refused
};
using net::kReservedFiles;
WorkerStoreSizing size_worker_store(size_t ranks, size_t open_files, std::optional<size_t> somaxconn);

// Listens on listen_host:port (port 0: the OS picks; read server->port()) for a job of
// `ranks` workers. Not serving yet: clients wait in the backlog until serve(). Throws
// LaunchError(kAddressInUse) when the port is taken, naming it and what to do, and
// LaunchError(kUsage) when this process cannot hold a connection per rank.
std::unique_ptr<c10d::Server> listen_worker_store(const std::string& listen_host, int port, bool restrict_peers,
                                                  size_t ranks);

}  // namespace ddp::launch::node
