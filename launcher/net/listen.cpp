#include "launcher/net/listen.hpp"

#include <boost/asio/ip/v6_only.hpp>

#include "launcher/net/endpoint.hpp"

namespace ddp::launch::net {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

// Opens, binds and listens on `endpoint`; dual_stack: an IPv6 socket that takes IPv4 too
// (IPV6_V6ONLY off). On failure the acceptor is closed again and the error returned.
error_code open_listener(tcp::acceptor& acceptor, const tcp::endpoint& endpoint, bool dual_stack, int backlog) {
  error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec && dual_stack) acceptor.set_option(asio::ip::v6_only(false), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(backlog > 0 ? backlog : asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error_code ignored;
    acceptor.close(ignored);
  }
  return ec;
}

// The address spec.host names; throws ListenError when it names none.
asio::ip::address address_of(asio::io_context& io, const ListenSpec& spec, const std::string& where) {
  error_code ec;
  if (spec.resolve_names) {
    tcp::resolver resolver(io);
    auto results = resolver.resolve(spec.host, std::to_string(spec.port), tcp::resolver::passive, ec);
    if (ec || results.empty()) throw ListenError(where + ": bad address (" + ec.message() + ")", false);
    return results.begin()->endpoint().address();
  }
  const auto address = asio::ip::make_address(spec.host, ec);
  if (ec) throw ListenError(where + ": not an IP address", false);
  return address;
}

}  // namespace

tcp::acceptor listen_acceptor(asio::io_context& io, const ListenSpec& spec) {
  const std::string where = spec.where.empty() ? host_port_text(spec.host, spec.port) : spec.where;
  const asio::ip::address address = address_of(io, spec, where);
  tcp::acceptor acceptor(io);
  error_code ec;
  if (spec.dual_stack_wildcard && address.is_unspecified()) {
    // "::" with IPv4 mapped in, so clients reach it over either family; "0.0.0.0" where this
    // host has no IPv6 (the socket or the option is refused). A taken port is taken for
    // both: no fallback then.
    ec = open_listener(acceptor, tcp::endpoint(tcp::v6(), spec.port), true, spec.backlog);
    if (ec && ec != asio::error::address_in_use && ec != asio::error::access_denied)
      ec = open_listener(acceptor, tcp::endpoint(tcp::v4(), spec.port), false, spec.backlog);
  } else {
    ec = open_listener(acceptor, tcp::endpoint(address, spec.port), false, spec.backlog);
  }
  if (!ec) return acceptor;
  const bool in_use = ec == asio::error::address_in_use;
  if (in_use && !spec.in_use_advice.empty())
    throw ListenError(where + ": address already in use; " + spec.in_use_advice, true);
  throw ListenError(where + ": " + ec.message(), in_use);
}

}  // namespace ddp::launch::net
