#include "launcher/many_hosts/plan/host_item.hpp"

#include <arpa/inet.h>

#include <algorithm>

#include <fmt/format.h>

namespace ddp::launch::many_hosts::plan {
namespace {

constexpr const char* kWriteBrackets =
    "write an IPv6 address in brackets, as [ADDR]:SLOTS (e.g. [fd00::2]:4) or [ADDR]";

HostItem problem(std::string text) {
  HostItem item;
  item.problem = std::move(text);
  return item;
}

}  // namespace

bool is_ipv6_address(std::string_view text) {
  const auto zone = text.find('%');
  if (zone != std::string_view::npos && zone + 1 == text.size()) return false;  // '%' without a zone
  const std::string address(text.substr(0, zone));
  in6_addr out{};
  return inet_pton(AF_INET6, address.c_str(), &out) == 1;
}

HostItem parse_host_item(std::string_view text, bool bare_address_whole) {
  HostItem item;
  if (!text.empty() && text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos)
      return problem(fmt::format("'{}' has no closing ']'; {}", text, kWriteBrackets));
    item.host = std::string(text.substr(1, close - 1));
    if (!is_ipv6_address(item.host))
      return problem(
          fmt::format("'{}' in brackets is not an IPv6 address (brackets are for IPv6 addresses only)", item.host));
    const std::string_view rest = text.substr(close + 1);
    if (rest.empty()) return item;
    if (rest.front() != ':')
      return problem(fmt::format("after '[{}]' comes ':' and the slots, or nothing, not '{}'", item.host, rest));
    item.after = std::string(rest.substr(1));
    return item;
  }
  const auto colons = std::count(text.begin(), text.end(), ':');
  if (colons >= 2) {
    if (bare_address_whole && is_ipv6_address(text)) {
      item.host = std::string(text);
      return item;
    }
    return problem(
        fmt::format("'{}' has more than one ':', so where the address ends is ambiguous; {}", text, kWriteBrackets));
  }
  const auto colon = text.find(':');
  item.host = std::string(text.substr(0, colon));
  if (colon != std::string_view::npos) item.after = std::string(text.substr(colon + 1));
  return item;
}

std::string bracketed(const std::string& host) { return host.find(':') != std::string::npos ? "[" + host + "]" : host; }

}  // namespace ddp::launch::many_hosts::plan
