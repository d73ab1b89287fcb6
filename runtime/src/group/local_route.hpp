// The local address this host uses to reach `host` (a name or an IP literal): the source
// address the kernel picks for a UDP socket "connected" to it (no packet is sent). Empty when
// the name does not resolve or nothing routes there. Torch-free; blocks on name resolution.
#pragma once

#include <string>

namespace ddp::detail {

std::string local_address_toward(const std::string& host);

// Whether `address` (an IP literal) is a loopback address (127.0.0.0/8, ::1).
bool is_loopback_address(const std::string& address);

}  // namespace ddp::detail
