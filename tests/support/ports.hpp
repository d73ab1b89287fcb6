// A TCP port that is free now on every IPv4 address (bound to port 0, then released), for
// tests that hand a port to a server they start. Another process may take it before the
// server binds; tests that mind retry. No torch, no launcher code.
#pragma once

namespace ddp::test {

int free_port();

}  // namespace ddp::test
