// Name resolution as the rendezvous needs it: one fresh lookup (getaddrinfo through Asio,
// nothing cached here), to tell a host name that does not resolve yet (a Kubernetes pod's
// DNS record appears seconds after the pod) from one that does. Blocking; thread-safe.
#pragma once

#include <string>

namespace ddp::launch::os {

// True when host is an IPv4 or IPv6 address literal (nothing to resolve).
bool is_ip_address(const std::string& host);

// "" when host resolves now; otherwise the resolver's reason ("Host not found ...").
std::string resolve_error(const std::string& host);

}  // namespace ddp::launch::os
