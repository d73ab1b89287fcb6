// c10d_store_helper: the launcher's workers' store (launcher/c10d) on its own, for the
// conformance tests. Prints "port N on ADDRESS" once it listens (ADDRESS: what it bound),
// serves until its stdin closes, logs each refused or dropped client on stderr.
// Usage: c10d_store_helper [--host ADDRESS] [--ranks N] [--restrict [HOST...]]
//   --host: where to listen (default 0.0.0.0: every interface, IPv6 too where the host has it)
//   --ranks: size it for a job of N ranks as the launcher does (launcher/node/worker_store.hpp;
//            default: the server's own defaults); a job that cannot fit exits 3 saying why
//   --restrict: only loopback, this host and the HOSTs may connect, as with a rendezvous token
// c10d_store_helper --requests: prints "CODE NAME" for each torch 2.x request the store
// serves (its decoder's opcode table), then exits.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "launcher/c10d/server.hpp"
#include "launcher/c10d/wire.hpp"
#include "launcher/net/open_files.hpp"
#include "launcher/node/worker_store.hpp"

namespace c10d = ddp::launch::c10d;

int main(int argc, char** argv) {
  c10d::ServerOptions options;
  std::vector<std::string> allowed;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--requests") {
      for (uint8_t code = 0; auto op = c10d::op_of_code(c10d::Dialect::kTorch2, code); ++code)
        std::cout << static_cast<int>(code) << ' ' << c10d::op_name(*op) << '\n';
      return 0;
    }
    if (arg == "--host" && i + 1 < argc) options.host = argv[++i];
    else if (arg == "--ranks" && i + 1 < argc) {
      const auto sizing = ddp::launch::node::size_worker_store(
          std::stoul(argv[++i]), ddp::launch::net::raise_open_file_limit(), ddp::launch::net::somaxconn());
      if (!sizing.error.empty()) {
        std::cerr << "c10d_store_helper: " << sizing.error << std::endl;
        return 3;
      }
      for (const auto& w : sizing.warnings) std::cerr << "c10d_store_helper: " << w << std::endl;
      options.max_connections = sizing.max_connections;
      options.backlog = sizing.backlog;
    } else if (arg == "--restrict") options.restrict_peers = true;
    else allowed.push_back(arg);
  }
  options.log = [](const std::string& line) { std::cerr << "c10d_store_helper: " << line << std::endl; };
  options.request_timeout = std::chrono::milliseconds(2000);
  c10d::Server server(options);
  server.serve(allowed);
  std::cout << "port " << server.port() << " on " << server.listen_address() << std::endl;
  for (int c = std::getchar(); c != EOF; c = std::getchar()) {
  }
  server.stop();
  return 0;
}
