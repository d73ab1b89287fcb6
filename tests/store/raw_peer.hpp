// RawPeer: a bare TCP connection for tests that must speak (or mangle) the protocol by
// hand and observe exactly what the server writes back and when it hangs up. Blocking,
// with timeouts; POSIX sockets (tests only). Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "launcher/store/protocol.hpp"

namespace ddp::launch::store::test {

class RawPeer {
 public:
  // Connects to 127.0.0.1, from `source` (an IPv4 address; "": the kernel's choice).
  explicit RawPeer(uint16_t port, int recv_buffer_bytes = 0, const std::string& source = "");
  ~RawPeer();
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;

  bool send(const std::string& bytes);  // false once the server has hung up
  // One frame's payload, or nullopt on timeout or hang-up.
  std::optional<std::string> read_frame(std::chrono::milliseconds timeout);
  // Everything that arrives until the server hangs up; sets closed() if it did in time.
  std::string drain(std::chrono::milliseconds timeout);
  bool closed() const { return closed_; }
  // Answers the greeting with a HELLO (no proof); throws unless the server accepts it.
  void handshake(const std::string& name = "", uint32_t heartbeat_ms = 0);

 private:
  bool receive_more(std::chrono::steady_clock::time_point deadline);
  int fd_ = -1;
  bool closed_ = false;
  std::string pending_;
};

// One request's bytes, to send by hand (pipelined: several before reading any reply).
std::string request_bytes(Op op, std::vector<std::string> keys, std::vector<std::string> values = {}, int64_t delta = 0,
                          uint32_t timeout_ms = 0);
// The peer's next reply; throws std::runtime_error naming `what` when none comes in time or
// it is not OK.
Response ok_reply(RawPeer& peer, std::chrono::milliseconds timeout, const std::string& what);

}  // namespace ddp::launch::store::test
