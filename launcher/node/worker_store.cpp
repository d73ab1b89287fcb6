
#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"
#include "launcher/console/notice.hpp"
#include "launcher/net/listen_error.hpp"
#include "launcher/node/worker_store.hpp"

namespace ddp::launch::node {

std::unique_ptr<c10d::Server> listen_worker_store(const std::string& listen_host, int port, bool restrict_peers) {
  c10d::ServerOptions options;
  options.host = listen_host;
  options.port = static_cast<uint16_t>(port);
  options.restrict_peers = restrict_peers;
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
