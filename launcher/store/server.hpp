// StoreServer: the agent store hosted by the node-0 launcher (or at --rdzv-endpoint).
// start() binds, then serves on ONE dedicated thread running its own single-threaded
// io_context: the launcher's main loop never blocks on its own server, and every piece of
// server state is touched only on that thread. stop() (or the destructor) joins it.
// Public methods are called from the owning thread; port() is safe after start().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "launcher/net/listen_error.hpp"
#include "launcher/store/protocol.hpp"
#include "launcher/store/store.hpp"

namespace ddp::launch::store {

struct ServerOptions {
  std::string host = "0.0.0.0";  // address to listen on (a name is resolved)
  uint16_t port = 0;             // 0: the OS picks one; read it back with port()
  // Shared secret. Empty: any client is accepted. Otherwise a client must answer the
  // greeting's nonce with HMAC-SHA256(token, nonce) or it is disconnected before any
  // request is processed. The launcher takes it from --rdzv-conf token=... or the
  // environment variable DDP_LAUNCH_RDZV_TOKEN.
  std::string token;
  // Larger request frames close the connection; a reply that would be larger is an ERROR
  // reply instead. Before authentication only kMaxHelloFrameBytes is accepted.
  uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
  // Once this many reply bytes wait for a client to read them, the server reads no more
  // of its requests until it does (backpressure; write_timeout still applies).
  size_t max_write_backlog_bytes = 1u << 20;
  // Open connections at most (lowered to fit the open-file limit). At the cap, a new
  // connection replaces the oldest one still unauthenticated, or is refused if none is.
  size_t max_connections = 1024;
  // The listen backlog asked for: the clients that may connect at once (the kernel caps it at
  // net.core.somaxconn); 0: SOMAXCONN.
  int backlog = 0;
  // A client must send HELLO, and finish any frame it has started, within this.
  Duration read_timeout{10000};
  // Each reply must be taken by the client within this (a peer that stops reading).
  Duration write_timeout{10000};
  // Called on the server thread with one line per notable event (client dropped,
  // rejected, protocol error). Empty: silent.
  std::function<void(const std::string&)> log;
};

class StoreServer {
 public:
  explicit StoreServer(ServerOptions options);
  ~StoreServer();  // stop()
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // Raises the process's soft open-file limit to the hard limit, binds and starts the
  // server thread. Throws net::ListenError naming host:port: the port is taken
  // (address_in_use()), the host does not resolve, or another OS error.
  void start();
  uint16_t port() const;
  std::string listen_address() const;  // "address:port" bound, after start()
  size_t max_connections() const;      // the effective cap, after start()
  // Closes every connection (no __dropped__ keys are set) and joins the thread. Idempotent.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::launch::store
