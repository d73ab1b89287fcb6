// A TCP port that is free now on every IPv4 address (bound, then released), for tests that
// hand a port to a server they start: drawn below the kernel's ephemeral range, so that no
// connection's own port takes it before the server binds (the suite opens thousands of
// connections; a port taken so is bound but refuses connections), never the same twice in a
// process. Another picker may still take it; tests that mind retry. No torch, no launcher code.
#pragma once

namespace ddp::test {

int free_port();

}  // namespace ddp::test
