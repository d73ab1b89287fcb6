#include "launcher/os/ports.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <fmt/format.h>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch::os {
namespace {
namespace asio = boost::asio;
using asio::ip::tcp;

// Binds 0.0.0.0:port; returns the bound port, or 0 with ec set.
int try_bind(int port, boost::system::error_code& ec) {
  asio::io_context io;
  tcp::acceptor acceptor(io);
  acceptor.open(tcp::v4(), ec);
  if (ec) return 0;
  acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  acceptor.bind(tcp::endpoint(tcp::v4(), static_cast<unsigned short>(port)), ec);
  if (ec) return 0;
  return acceptor.local_endpoint().port();
}

}  // namespace

int pick_free_port() {
  boost::system::error_code ec;
  int port = try_bind(0, ec);
  if (ec || port == 0)
    throw LaunchError(exit_code::kAddressInUse,
                      fmt::format("cannot find a free TCP port for the workers' store: {}", ec.message()));
  return port;
}

void ensure_port_free(const std::string& host, int port) {
  boost::system::error_code ec;
  try_bind(port, ec);
  if (ec == asio::error::address_in_use)
    throw LaunchError(exit_code::kAddressInUse,
                      fmt::format("master port {}:{} is already in use (another job, or a stale "
                                  "one?); pick another --master-port, or drop it to get a free port",
                                  host, port));
  if (ec == asio::error::access_denied)
    throw LaunchError(exit_code::kAddressInUse,
                      fmt::format("master port {}:{} needs privileges to bind; use a port above 1023", host, port));
}

bool is_local_address(const std::string& host) {
  asio::io_context io;
  boost::system::error_code ec;
  tcp::resolver resolver(io);
  auto results = resolver.resolve(host, "0", ec);
  if (ec) return false;
  for (const auto& entry : results) {
    tcp::acceptor acceptor(io);
    auto endpoint = tcp::endpoint(entry.endpoint().address(), 0);
    acceptor.open(endpoint.protocol(), ec);
    if (ec) continue;
    acceptor.bind(endpoint, ec);
    if (!ec) return true;
  }
  return false;
}

std::string store_listen_host(const std::string& host) {
  if (host == "localhost") return "127.0.0.1";
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec || !is_local_address(host)) return "0.0.0.0";
  return address.to_string();
}

bool is_loopback_address(const std::string& ip) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(ip, ec);
  return !ec && address.is_loopback();
}

}  // namespace ddp::launch::os
