// Pure encoding and decoding of the store protocol (protocol.hpp): no sockets, no state
// beyond FrameDecoder's buffer. encode_* return a whole frame (length prefix included);
// decode_* take one payload and throw ProtocolError on anything malformed or trailing.
// Not thread-safe per FrameDecoder; the free functions are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/store/protocol.hpp"

namespace ddp::launch::store {

std::string encode_greeting(const Greeting& greeting);
std::string encode_hello(const Hello& hello);
std::string encode_request(const Request& request);
std::string encode_response(const Response& response);
// The frame encode_response writes for an OK reply carrying `values`, copied once from
// where they are stored (the server's GET / MULTI_GET replies: no Response in between).
std::string encode_values_reply(Op op, const std::vector<const std::string*>& values);
// The bytes encode_response would produce (header included), computed without encoding.
size_t encoded_size(const Response& response);

Greeting decode_greeting(std::string_view payload);
Hello decode_hello(std::string_view payload);      // checks nothing but the shape
Request decode_request(std::string_view payload);  // checks the op and its field counts
Response decode_response(std::string_view payload);

// Splits a byte stream into frame payloads. feed() throws ProtocolError as soon as a
// header announces an empty frame or one larger than the limit, before buffering it. The
// first frame has its own (smaller) limit: the server's HELLO, before authentication.
class FrameDecoder {
 public:
  explicit FrameDecoder(uint32_t max_frame_bytes = kDefaultMaxFrameBytes)
      : max_frame_bytes_(max_frame_bytes), first_frame_max_(max_frame_bytes) {}
  FrameDecoder(uint32_t max_frame_bytes, uint32_t first_frame_max)
      : max_frame_bytes_(max_frame_bytes), first_frame_max_(first_frame_max) {}

  void feed(const char* data, size_t size);
  void feed(std::string_view bytes) { feed(bytes.data(), bytes.size()); }
  // The next whole payload, if one has arrived.
  std::optional<std::string> next();
  // True when part of a frame is buffered (the peer is in the middle of sending one).
  bool mid_frame() const { return !buffer_.empty(); }

 private:
  void check_header();

  uint32_t max_frame_bytes_;
  uint32_t first_frame_max_;
  uint64_t frames_taken_ = 0;
  std::string buffer_;  // unconsumed bytes; whole frames are taken from the front
};

}  // namespace ddp::launch::store
