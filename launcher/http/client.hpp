// One HTTP/1.1 GET with a deadline (Boost.Beast, a private io_context): what `ddp-launch
// status` asks a launcher's status endpoint. Blocks up to `timeout`; throws ClientError
// (unreachable, timed out, not HTTP, or a status other than 200). Thread-safe (no shared state).
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ddp::launch::http {

class ClientError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The body of GET http://host:port/target.
std::string get(const std::string& host, uint16_t port, const std::string& target, std::chrono::milliseconds timeout);

}  // namespace ddp::launch::http
