#include "launcher/net.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <fmt/format.h>

#include "launcher/exit_status.hpp"
#include "launcher/launch_error.hpp"

namespace ddp::launch {
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
                      fmt::format("master port {}:{} needs privileges to bind; use a port above 1023",
                                  host, port));
}

}  // namespace ddp::launch
