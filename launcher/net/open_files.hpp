// What a server's connection count is bounded by on this machine: the process's open-file
// limit (one descriptor per connection), lifted from the soft to the hard limit once (an
// inherited 1024 would cap a store far below what the machine allows), and the kernel's cap
// on a listen backlog (net.core.somaxconn). Reads and one setrlimit; never fails.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace ddp::launch::net {

// The files a launcher keeps for itself (logs, pipes, workers, the status page) when it sizes
// a store by the open-file limit.
inline constexpr size_t kReservedFiles = 256;

// Raises the soft RLIMIT_NOFILE to the hard one where it is lower; returns the soft limit now
// in force (SIZE_MAX: unlimited; 1024 when it cannot be read).
size_t raise_open_file_limit();

// /proc/sys/net/core/somaxconn; nullopt where it cannot be read.
std::optional<size_t> somaxconn();

// What to say when `somaxconn` is below the `at_once` connections that arrive together (`what`
// names them: "ranks that connect to the workers' store at once"); "" when it holds them or is
// unknown. Pure.
std::string backlog_warning(std::optional<size_t> somaxconn, size_t at_once, const std::string& what);

}  // namespace ddp::launch::net
