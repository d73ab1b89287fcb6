// listen_acceptor: the one listen sequence of the launcher's three servers (the agent store,
// the workers' store, the status endpoint): the host turned into an address, then open,
// reuse_address, bind and listen; on failure the socket is closed again and ListenError
// names the listener and says whether the port is taken. Blocks only to resolve a name
// (resolve_names); the acceptor it returns belongs to the caller's io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <string>

#include "launcher/net/listen_error.hpp"

namespace ddp::launch::net {

struct ListenSpec {
  std::string host;   // an IP address (a name too with resolve_names)
  uint16_t port = 0;  // 0: the OS picks one (read it from the acceptor's local_endpoint())
  // How an error names the listener, before ": <why>" (e.g. "cannot listen for the workers'
  // store on 0.0.0.0:29500"). Empty: host_port_text(host, port).
  std::string where;
  // What to do when the port is taken, said after "address already in use; ". Empty: the
  // OS's own words stand.
  std::string in_use_advice;
  // A name is looked up (passive: the first address it gives) instead of refused as "not an
  // IP address"; a failed lookup is "bad address (<why>)".
  bool resolve_names = false;
  // The wildcards "0.0.0.0" and "::" listen on every interface over IPv6 and IPv4 alike
  // (one "::" socket with IPV6_V6ONLY off), or over IPv4 alone where this host has no IPv6.
  bool dual_stack_wildcard = false;
  // The listen backlog asked for (the kernel caps it at net.core.somaxconn); 0: SOMAXCONN.
  int backlog = 0;
};

// A listening acceptor on `io` as `spec` asks. Throws ListenError.
boost::asio::ip::tcp::acceptor listen_acceptor(boost::asio::io_context& io, const ListenSpec& spec);

}  // namespace ddp::launch::net
