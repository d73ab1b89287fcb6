#include "launcher/net/endpoint.hpp"

namespace ddp::launch::net {

namespace ip = boost::asio::ip;

ip::address unmapped(const ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped()) return ip::make_address_v4(ip::v4_mapped, address.to_v6());
  return address;
}

std::string endpoint_text(const ip::tcp::endpoint& endpoint) {
  const ip::address a = unmapped(endpoint.address());
  const std::string port = std::to_string(endpoint.port());
  return a.is_v6() ? "[" + a.to_string() + "]:" + port : a.to_string() + ":" + port;
}

std::string host_port_text(const std::string& host, uint16_t port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace ddp::launch::net
