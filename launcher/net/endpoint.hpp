// How the servers write addresses in their messages and logs: an IPv6 address in brackets,
// an IPv4-mapped IPv6 address as the IPv4 address it carries. Pure.
#pragma once

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <cstdint>
#include <string>

namespace ddp::launch::net {

// An IPv4-mapped IPv6 address (::ffff:a.b.c.d) as IPv4; any other address as it is.
boost::asio::ip::address unmapped(const boost::asio::ip::address& address);

// "1.2.3.4:80", "[::1]:80" (a mapped address as IPv4).
std::string endpoint_text(const boost::asio::ip::tcp::endpoint& endpoint);

// "host:80", or "[::1]:80" for a host that holds a ':' (an IPv6 literal).
std::string host_port_text(const std::string& host, uint16_t port);

}  // namespace ddp::launch::net
