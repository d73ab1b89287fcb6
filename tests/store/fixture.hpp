// A StoreServer on 127.0.0.1 (a free port) for one test, and clients for it.
#pragma once

#include <chrono>
#include <memory>

#include "launcher/store/server.hpp"
#include "launcher/store/tcp_client.hpp"

namespace ddp::launch::store::test {

using namespace std::chrono_literals;

inline ServerOptions local_options() {
  ServerOptions o;
  o.host = "127.0.0.1";
  return o;
}

struct LocalServer {
  explicit LocalServer(ServerOptions o = local_options()) : server(std::move(o)) { server.start(); }
  std::unique_ptr<TcpStoreClient> client(ClientOptions o = {}) {
    if (o.connect_timeout == ClientOptions{}.connect_timeout) o.connect_timeout = 5s;
    if (o.request_timeout == ClientOptions{}.request_timeout) o.request_timeout = 5s;
    return std::make_unique<TcpStoreClient>("127.0.0.1", server.port(), o);
  }
  StoreServer server;
};

// Seconds since start, for timing assertions.
struct Stopwatch {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

}  // namespace ddp::launch::store::test
