// The launcher's side of a standby's control channel (warm restarts): an AF_UNIX
// socketpair, the handoff sent with the worker's three fds attached (SCM_RIGHTS), and the
// cheap checks around it (/dev/null for a worker without stdin; whether an executable
// carries libddp's standby-hook marker). The message itself is contract/standby_handoff.hpp.
// send_handoff blocks at most its timeout; the rest does not block. Not thread-safe.
#pragma once

#include <array>
#include <chrono>
#include <string>
#include <string_view>

#include "launcher/os/process.hpp"

namespace ddp::launch::os {

struct ChannelPair {
  UniqueFd launcher_end;  // O_CLOEXEC
  UniqueFd standby_end;   // O_CLOEXEC too: SpawnSpec::inherit_fd passes it to the standby alone
};
ChannelPair make_channel();  // throws LaunchError (120) on failure

// Writes the whole frame, the fds attached to its first byte; false (and *error says why:
// the standby died, or did not read for `timeout`) when it could not. Never raises SIGPIPE.
bool send_handoff(int channel, const std::string& frame, const std::array<int, 3>& fds,
                  std::chrono::milliseconds timeout, std::string* error);

// /dev/null opened for reading (O_CLOEXEC); throws LaunchError (120) on failure.
UniqueFd open_dev_null();

// Whether the file at path contains needle (read in chunks; false if it cannot be read).
bool file_contains(const std::string& path, std::string_view needle);

}  // namespace ddp::launch::os
