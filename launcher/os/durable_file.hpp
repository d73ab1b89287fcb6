// Files that survive a crash or a power loss whole or not at all: written to a temporary
// name beside the final one, fsync'ed, renamed over it, the folder fsync'ed. For the
// snapshot persister (snapshot/snapshot_persister). Blocking (the write and the fsyncs);
// no shared state (thread-safe); never throws: errors come back as text.
#pragma once

#include <string>
#include <string_view>

namespace ddp::launch::os {

// Writes `data` to `temp_path`, fsyncs it, renames it to `path` (same folder) and fsyncs the
// folder. "" on success, else what failed (the temporary file is removed then).
std::string write_file_durably(const std::string& temp_path, const std::string& path, std::string_view data);

// Creates `dir` (and its parents) if missing and checks that a file can be created in it
// (by creating and removing one: a real test, also for root). "" if so, else why not.
std::string prepare_writable_dir(const std::string& dir);

}  // namespace ddp::launch::os
