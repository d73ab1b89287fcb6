// One fresh name lookup; see dns.hpp.
#include "launcher/os/dns.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace ddp::launch::os {

bool is_ip_address(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

std::string resolve_error(const std::string& host) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  resolver.resolve(host, "0", ec);
  return ec ? ec.message() : "";
}

}  // namespace ddp::launch::os
