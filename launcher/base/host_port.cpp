#include "launcher/base/host_port.hpp"

#include "launcher/base/text.hpp"

namespace ddp::launch {
namespace {

constexpr int kMaxPort = 65535;

HostPortError not_host_port(std::string_view shown, const std::string& why) {
  return HostPortError("'" + std::string(shown) + "' is not HOST[:PORT] (" + why + ")");
}

// `item` (trimmed) as host[:port]; errors name `shown`, the item as the user wrote it.
// `urls`: the caller took an http:// or https:// off already; another scheme is left.
HostPort parse_item(std::string_view item, std::string_view shown, int default_port, bool urls = false) {
  if (item.empty()) throw not_host_port(shown, "it is empty");
  if (item.find(',') != std::string_view::npos) throw not_host_port(shown, "one endpoint is expected here, not a list");
  if (item.find("://") != std::string_view::npos)
    throw not_host_port(shown,
                        urls ? "a URL here is http:// or https://" : "no scheme:// here, only the host and the port");
  if (item.find_first_of(" \t/") != std::string_view::npos)
    throw not_host_port(shown, "a host holds no blanks and no '/'");
  HostPort hp{"", default_port};
  std::string_view port;  // the text after the host's ':'
  bool has_port = false;
  if (item.front() == '[') {  // [v6] or [v6]:port
    const size_t close = item.find(']');
    if (close == std::string_view::npos) throw not_host_port(shown, "'[' without its ']'");
    hp.host = std::string(item.substr(1, close - 1));
    const std::string_view rest = item.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') throw not_host_port(shown, "only :PORT may follow ']'");
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
    if (hp.host.find('[') != std::string::npos) throw not_host_port(shown, "one '[' too many");
  } else {
    if (item.find_first_of("[]") != std::string_view::npos)
      throw not_host_port(shown, "brackets go around a whole IPv6 address, as [::1]:2379");
    const size_t colon = item.find(':');
    if (colon != std::string_view::npos && item.find(':', colon + 1) != std::string_view::npos)
      throw not_host_port(shown, "an IPv6 address goes in brackets, as [::1] or [::1]:2379");
    hp.host = std::string(item.substr(0, colon));
    has_port = colon != std::string_view::npos;
    if (has_port) port = item.substr(colon + 1);
  }
  if (hp.host.empty()) throw not_host_port(shown, "the host is empty");
  if (has_port) {
    const auto n = parse_natural(port);
    if (!n || *n < 1 || *n > kMaxPort) throw not_host_port(shown, "the port must be a number 1-65535");
    hp.port = static_cast<int>(*n);
  }
  return hp;
}

// The non-empty items of a comma-separated list, trimmed; at least one.
std::vector<std::string> list_items(std::string_view text) {
  std::vector<std::string> items;
  for (const std::string& item : split(text, ',', EmptyItems::kSkip))
    if (std::string t = trim(item); !t.empty()) items.push_back(std::move(t));
  if (items.empty())
    throw HostPortError("'" + std::string(text) + "' names no endpoint (expected HOST[:PORT][,HOST[:PORT]...])");
  return items;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

}  // namespace

HostPort parse_host_port(std::string_view text, int default_port) {
  const std::string item = trim(text);
  return parse_item(item, item, default_port);
}

std::string format_host_port(const std::string& host, int port) {
  const std::string name = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return name + ":" + std::to_string(port);
}

std::vector<HostPort> parse_host_port_list(std::string_view text, int default_port) {
  std::vector<HostPort> out;
  for (const std::string& item : list_items(text)) out.push_back(parse_item(item, item, default_port));
  return out;
}

std::vector<HttpEndpoint> parse_http_endpoint_list(std::string_view text, int default_port) {
  std::vector<HttpEndpoint> out;
  for (const std::string& item : list_items(text)) {
    std::string_view rest = item;
    HttpEndpoint e;
    if (starts_with(rest, "http://")) {
      rest.remove_prefix(7);
    } else if (starts_with(rest, "https://")) {
      rest.remove_prefix(8);
      e.https = true;
    }
    if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    e.address = parse_item(rest, item, default_port, /*urls=*/true);
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace ddp::launch
