// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), self-contained so the launcher needs
// no OpenSSL; used only to prove knowledge of the store token without sending it.
// Pure functions returning raw 32-byte digests; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace ddp::launch::store {

std::string sha256(std::string_view message);
std::string hmac_sha256(std::string_view key, std::string_view message);
std::string to_hex(std::string_view bytes);
// Compares without an early exit, so timing does not reveal the matching prefix.
bool constant_time_equal(std::string_view a, std::string_view b);
// kNonceBytes-style random bytes from the OS (std::random_device).
std::string random_bytes(size_t count);

}  // namespace ddp::launch::store
