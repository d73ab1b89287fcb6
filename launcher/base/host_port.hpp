// host_port: the one parser of network endpoints as people write them: "host[:port]" and
// lists "host[:port][,host[:port]...]"; an IPv6 address goes in brackets ("[::1]:2379"). A
// bare IPv6 address is refused: in "fe80::1:2379" the last group may be a port or part of
// the address. Pure and thread-safe. Errors throw HostPortError (exit 121) naming the value
// and what is expected, never a flag: the caller that knows the flag adds it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "launcher/base/exit_status.hpp"
#include "launcher/base/launch_error.hpp"

namespace ddp::launch {

struct HostPort {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without its brackets
  int port = 0;
};

// Text that is not an endpoint: a usage error.
class HostPortError : public LaunchError {
 public:
  explicit HostPortError(const std::string& message) : LaunchError(exit_code::kUsage, message) {}
};

// "host", "host:port", "[v6]", "[v6]:port" (blanks around it ignored): the port 1-65535,
// default_port when absent. A list ("a,b") is an error here.
HostPort parse_host_port(std::string_view text, int default_port);

// How messages write an endpoint: "host:port", "[v6]:port" (the form parse_host_port reads).
std::string format_host_port(const std::string& host, int port);

// "a[:p],b[:p],...": one HostPort per item, in order; blanks around items ignored, empty
// items skipped; at least one.
std::vector<HostPort> parse_host_port_list(std::string_view text, int default_port);

// The same list where an item may also be written as a URL, "http://host[:port]" or
// "https://host[:port]/" (how etcd names its client URLs). What https means is the caller's.
struct HttpEndpoint {
  HostPort address;
  bool https = false;
};
std::vector<HttpEndpoint> parse_http_endpoint_list(std::string_view text, int default_port);

}  // namespace ddp::launch
