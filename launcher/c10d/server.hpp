// Server: a c10d-TCPStore-compatible store the launcher hosts for its workers (torch 1.13
// and 2.x clients, told apart by their first bytes; see docs/store.md "The workers' store").
// listen() binds and listens at once, so early clients wait in the backlog; serve() starts
// ONE thread running its own Asio loop that accepts and serves; every piece of state is
// touched only there. stop() (or the destructor) closes everything and joins. A client the
// server does not understand is disconnected with one log line naming the peer and why.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "launcher/c10d/wire.hpp"
#include "launcher/net/listen_error.hpp"

namespace ddp::launch::c10d {

using Duration = std::chrono::milliseconds;

struct ServerOptions {
  // Address to listen on. An IP literal is taken as it is, except the wildcards "0.0.0.0"
  // and "::": every interface, over IPv6 and IPv4 alike (one "::" socket with IPV6_V6ONLY
  // off, as c10d's own server), or IPv4 alone where this host has no IPv6.
  std::string host = "0.0.0.0";
  uint16_t port = 0;                // 0: the OS picks one (port() after listen())
  Limits limits;                    // keys, values, keys per request
  size_t max_connections = 4096;    // more are refused (and logged); the launcher sizes it by the job
  int backlog = 0;                  // the listen backlog (0: SOMAXCONN); the kernel caps it at somaxconn
  Duration request_timeout{30000};  // a started request must be complete within this
  Duration write_timeout{30000};    // each reply must be taken by the client within this
  // Refuse every peer that is not loopback, this host, or one of allowed_hosts (set when a
  // rendezvous token is: c10d clients cannot authenticate). Names are resolved by serve().
  bool restrict_peers = false;
  // Called on the server thread with one line per refused or dropped client. Empty: silent.
  std::function<void(const std::string&)> log;
};

// The peer check with restrict_peers: loopback, this host (the accepted socket's own
// address) or one of allowed (addresses; IPv4-mapped IPv6 counts as IPv4). Pure.
bool peer_allowed(const std::string& remote_ip, const std::string& local_ip, const std::vector<std::string>& allowed);

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Throws net::ListenError naming host:port (address_in_use(): the port is taken); idempotent.
  void listen();
  // Starts serving (listen() first if needed). With restrict_peers, allowed_hosts are the
  // round's nodes (names or addresses); a name that does not resolve is logged and skipped.
  void serve(const std::vector<std::string>& allowed_hosts = {});
  uint16_t port() const;  // after listen()
  // After listen(): the address bound ("::" when every interface is served dual-stack,
  // "0.0.0.0" when IPv6 was unavailable, else the host asked for).
  std::string listen_address() const;
  void stop();  // idempotent

  // Counters for tests, read on any thread after stop() or while idle.
  size_t connections_refused() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ddp::launch::c10d
