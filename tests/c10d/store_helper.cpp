// c10d_store_helper: the launcher's workers' store (launcher/c10d) on its own, for the
// conformance tests. Prints "port N" once it listens, serves until its stdin closes, logs
// each refused or dropped client on stderr. Usage: c10d_store_helper [--restrict [HOST...]]
// (--restrict: only loopback, this host and the HOSTs may connect, as with a rendezvous token).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "launcher/c10d/server.hpp"

int main(int argc, char** argv) {
  ddp::launch::c10d::ServerOptions options;
  std::vector<std::string> allowed;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--restrict") options.restrict_peers = true;
    else allowed.push_back(arg);
  }
  options.log = [](const std::string& line) { std::cerr << "c10d_store_helper: " << line << std::endl; };
  options.request_timeout = std::chrono::milliseconds(2000);
  ddp::launch::c10d::Server server(options);
  server.serve(allowed);
  std::cout << "port " << server.port() << std::endl;
  for (int c = std::getchar(); c != EOF; c = std::getchar()) {
  }
  server.stop();
  return 0;
}
