// The workers' store the launcher hosts (launcher/c10d's server): bound and listening
// before any worker of the attempt starts, at the MASTER_PORT the attempt exports, its
// refusals and protocol errors logged as launcher notices. Whoever holds the server stops it
// (resets the pointer) only once the attempt's workers are gone. Blocking but instant.
#pragma once

#include <memory>
#include <string>

#include "launcher/c10d/server.hpp"

namespace ddp::launch::node {

// Listens on listen_host:port (port 0: the OS picks; read server->port()). Not serving yet:
// clients wait in the backlog until serve(). Throws LaunchError(kAddressInUse) when the
// port is taken, naming it and what to do.
std::unique_ptr<c10d::Server> listen_worker_store(const std::string& listen_host, int port, bool restrict_peers);

}  // namespace ddp::launch::node
