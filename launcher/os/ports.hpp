// Port helpers for the workers' store: pick a free TCP port, or check that an explicit
// one can be bound. Both bind on all IPv4 interfaces with SO_REUSEADDR, as c10d's
// TCPStore server does, then close the socket. Blocking but instant.
#pragma once

#include <string>

namespace ddp::launch::os {

int pick_free_port();  // throws LaunchError(kAddressInUse) if the OS gives none

// Throws LaunchError(kAddressInUse) naming host:port when the port is taken.
void ensure_port_free(const std::string& host, int port);

// True if host names this machine: it resolves to an address a socket can bind here
// (loopback, or one of this machine's interface addresses).
bool is_local_address(const std::string& host);

// Where the agent store listens when the job reaches it at host: host itself when it is an
// IP address of this machine, 127.0.0.1 for "localhost", else every interface ("0.0.0.0"):
// a name may resolve differently here (Debian maps the host name to 127.0.1.1) than on
// the nodes that connect. The workers' store (c10d::Server) serves that wildcard over IPv6
// and IPv4 alike.
std::string store_listen_host(const std::string& host);
bool is_loopback_address(const std::string& ip);  // 127.0.0.0/8 or ::1; false for a name

}  // namespace ddp::launch::os
