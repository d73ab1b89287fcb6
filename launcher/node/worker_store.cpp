// The workers' store: its sizing (pure) and listening; see worker_store.hpp.
#include "launcher/node/worker_store.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/net/listen_error.hpp"
#include "launcher/net/open_files.hpp"

namespace ddp::launch::node {

WorkerStoreSizing size_worker_store(size_t ranks, size_t open_files, std::optional<size_t> somaxconn) {
  WorkerStoreSizing s;
  const size_t wanted = 2 * ranks + 64;
  const size_t room = open_files > kReservedFiles ? open_files - kReservedFiles : 0;
  s.max_connections = std::max<size_t>(1, std::min(wanted, room));
  s.backlog = static_cast<int>(std::min<size_t>(std::max<size_t>(ranks, 128), std::numeric_limits<int>::max()));
  if (room < ranks) {
    s.error = fmt::format(
        "the workers' store needs a connection per rank, {} for this job, but this process may open only {} files "
        "(ulimit -n; {} kept for the launcher itself): raise the hard open-file limit (ulimit -Hn, systemd "
        "LimitNOFILE=, docker --ulimit nofile=) to at least {}, run fewer ranks, or use --worker-store=rank0",
        ranks, open_files, kReservedFiles, ranks + kReservedFiles);
    return s;
  }
  if (room < 2 * ranks)
    s.warnings.push_back(fmt::format(
        "the workers' store can hold {} connections (ulimit -n {}): enough for torch 2.x clients (one per rank), "
        "but torch 1.13 clients open two each ({} for this job) and would be refused past it; raise the hard "
        "open-file limit to {} for them",
        s.max_connections, open_files, 2 * ranks, 2 * ranks + kReservedFiles));
  if (std::string w = net::backlog_warning(somaxconn, ranks, "ranks that connect to the workers' store at once");
      !w.empty())
    s.warnings.push_back(std::move(w));
  return s;
}

std::unique_ptr<c10d::Server> listen_worker_store(const std::string& listen_host, int port, bool restrict_peers,
                                                  size_t ranks) {
  const WorkerStoreSizing sizing = size_worker_store(ranks, net::raise_open_file_limit(), net::somaxconn());
  if (!sizing.error.empty()) throw LaunchError(exit_code::kUsage, sizing.error);
  static bool warned = false;  // once per launcher: every attempt sizes the store alike
  if (!warned)
    for (const auto& w : sizing.warnings) console::launcher_notice(w);
  warned = true;
  c10d::ServerOptions options;
  options.host = listen_host;
  options.port = static_cast<uint16_t>(port);
  options.restrict_peers = restrict_peers;
  options.max_connections = sizing.max_connections;
  options.backlog = sizing.backlog;
  options.log = [](const std::string& line) { console::launcher_notice(line); };
  auto server = std::make_unique<c10d::Server>(std::move(options));
  try {
    server->listen();
  } catch (const net::ListenError& e) {
    throw LaunchError(e.address_in_use() ? exit_code::kAddressInUse : exit_code::kInternalError,
                      std::string(e.what()) + " (or --worker-store=rank0: worker rank 0 hosts it)");
  }
  return server;
}

}  // namespace ddp::launch::node
