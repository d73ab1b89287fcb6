// Cutting live TCP connections for real, as a broken network would: `ss -K` has the kernel
// destroy the sockets (the other end sees a reset). That needs root and a kernel with
// CONFIG_INET_DIAG_DESTROY; require_cut_connections() skips the case (exit 77) where either
// is missing. Blocking (runs ss); any thread; no torch, no launcher code.
#pragma once

namespace ddp::test {

// Destroys every TCP socket connected to 127.0.0.1:port (the clients' ends). True if ss
// destroyed at least one established connection.
bool cut_connections(int port);

// Whether cut_connections works here: tried once per process, on a throwaway loopback
// connection of its own.
bool can_cut_connections();

// Ends the case as skipped (skip_test) unless can_cut_connections(). Call it first.
void require_cut_connections();

}  // namespace ddp::test
