// One host as a host list writes it, with what follows its ':' (slots): `gpu1`, `gpu1:4`,
// and IPv6 addresses in brackets, `[fd00::2]`, `[fd00::2]:4` (Horovod's, and --include's
// `[fd00::2]:0,1`). An address without brackets is read whole only where nothing can follow
// it (a hostfile line's `fd00::2 slots=4`); elsewhere `fd00::1:4` is ambiguous and refused
// with what to write. Pure, thread-safe; problems come back as text for the caller's error.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ddp::launch::many_hosts::plan {

struct HostItem {
  std::string host;                  // as ssh and the rendezvous take it: an IPv6 address without brackets
  std::optional<std::string> after;  // the text after the host's ':' (none without a ':')
  std::string problem;               // non-empty: not a host item; says what to write
};

// bare_address_whole: an unbracketed text with two or more ':' is one IPv6 address (when it
// is one), never ADDRESS:SUFFIX.
HostItem parse_host_item(std::string_view text, bool bare_address_whole);

// An IPv6 address, optionally with a zone (`fe80::1%eth0`).
bool is_ipv6_address(std::string_view text);

// How messages and prefixes name a host: an IPv6 address in brackets, anything else as is.
std::string bracketed(const std::string& host);

}  // namespace ddp::launch::many_hosts::plan
