// Port helpers for the workers' store: pick a free TCP port, or check that an explicit
// one can be bound. Both bind on all IPv4 interfaces with SO_REUSEADDR, as c10d's
// TCPStore server does, then close the socket. Blocking but instant.
#pragma once

#include <string>

namespace ddp::launch {

int pick_free_port();  // throws LaunchError(kAddressInUse) if the OS gives none

// Throws LaunchError(kAddressInUse) naming host:port when the port is taken.
void ensure_port_free(const std::string& host, int port);

}  // namespace ddp::launch
