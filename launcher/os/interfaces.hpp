// This machine's network interfaces and their IPv4/IPv6 addresses (getifaddrs), and what a
// host name resolves to here (getaddrinfo through Asio, nothing cached). Addresses are written
// as inet_ntop writes them, without an IPv6 scope. Blocking but instant for an address or a
// name in /etc/hosts (a DNS lookup for other names); thread-safe; never throws.
#pragma once

#include <string>
#include <vector>

namespace ddp::launch::os {

struct InterfaceAddress {
  std::string name;     // the interface, e.g. "eth0"
  std::string address;  // one of its addresses, e.g. "10.0.0.2" or "fd00::2"
};

// Every IPv4 and IPv6 address of every interface that is up, in getifaddrs' order; empty
// when getifaddrs fails.
std::vector<InterfaceAddress> interface_addresses();

// The addresses host resolves to here, in the resolver's order, each once (host itself when it
// is an address); empty when it does not resolve.
std::vector<std::string> resolve_addresses(const std::string& host);

}  // namespace ddp::launch::os
