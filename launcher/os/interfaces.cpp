// getifaddrs and one lookup; see interfaces.hpp.
#include "launcher/os/interfaces.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <algorithm>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace ddp::launch::os {
namespace {

std::string without_scope(std::string address) {
  if (const auto percent = address.find('%'); percent != std::string::npos) address.erase(percent);
  return address;
}

}  // namespace

std::vector<InterfaceAddress> interface_addresses() {
  std::vector<InterfaceAddress> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_name == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = nullptr;
    if (i->ifa_addr->sa_family == AF_INET) raw = &reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr;
    else if (i->ifa_addr->sa_family == AF_INET6) raw = &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr;
    if (raw == nullptr || inet_ntop(i->ifa_addr->sa_family, raw, text, sizeof text) == nullptr) continue;
    out.push_back({i->ifa_name, text});
  }
  freeifaddrs(list);
  return out;
}

std::vector<std::string> resolve_addresses(const std::string& host) {
  std::vector<std::string> out;
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  const auto results = resolver.resolve(host, "0", ec);
  if (ec) return out;
  for (const auto& entry : results) {
    std::string address = without_scope(entry.endpoint().address().to_string());
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(std::move(address));
  }
  return out;
}

}  // namespace ddp::launch::os
