// Private files in a shared-memory folder (/dev/shm): created with an unguessable name,
// mode 0600 and O_EXCL, and swept when the launcher that made them died without removing
// them (SIGKILL). The name is PREFIX-PID-RANDOM-TAG, PID the creating launcher's. Blocking
// but instant (a few system calls); no shared state (thread-safe).
#pragma once

#include <optional>
#include <string>

namespace ddp::launch::os {

struct ShmFileResult {
  std::string path;   // set on success
  std::string error;  // why not (the folder is missing, not writable, ...)
};

// Creates an empty file DIR/PREFIX-PID-RANDOM-TAG (0600, O_EXCL); never throws.
ShmFileResult create_private_shm_file(const std::string& dir, const std::string& prefix, const std::string& tag);

// Removes DIR/PREFIX-PID-* files this user owns whose launcher PID is no longer running;
// returns how many it removed. Best effort: never throws.
int sweep_orphaned_shm_files(const std::string& dir, const std::string& prefix);

// The same for folders DIR/PREFIX-PID-* (removed with what they hold), e.g. a dead launcher's
// temporary folders.
int sweep_orphaned_dirs(const std::string& dir, const std::string& prefix);

// The free bytes of the file system holding `dir`, or nullopt.
std::optional<unsigned long long> free_bytes(const std::string& dir);

}  // namespace ddp::launch::os
