// The standby handoff: the message a launcher sends a pre-warmed standby process to turn
// it into a worker (docs/warm-restarts.md). A frame is a u32 payload length, then the
// payload: magic "DDPH", a u8 version, argv, env ("KEY=VALUE"), cwd, each string a u32
// length and its bytes, every integer little-endian. The three fds (stdin, stdout, stderr)
// travel beside it (SCM_RIGHTS). A Python standby may first get a prepare frame (magic
// "DDPS", version, argv): run that script up to its standby point, then say kPointByte. Pure C++17, no dependencies, no
// I/O: the launcher, libddp's standby hook and python/ddp_standby.py (which mirrors it) share it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::standby {

inline constexpr char kMagic[4] = {'D', 'D', 'P', 'H'};
inline constexpr uint8_t kVersion = 1;
inline constexpr uint32_t kMaxPayload = 4u << 20;  // 4 MiB: a far larger environment than any real one
inline constexpr size_t kFdCount = 3;              // stdin, stdout, stderr, in this order
inline constexpr char kReadyByte = 'R';            // standby -> launcher: blocked, waiting for a handoff
inline constexpr char kPrepareMagic[4] = {'D', 'D', 'P', 'S'};
inline constexpr char kPointByte = 'P';  // standby -> launcher: prepared, blocked at the point for a handoff
inline constexpr const char* kFdEnvVar = "DDP_LAUNCH_STANDBY_FD";  // the channel's fd in a standby
// The marker a program linked with libddp carries (its standby hook); the launcher scans
// an executable for it before it keeps a standby of it.
inline constexpr const char* kHookMarker = "DDP_LAUNCH_STANDBY_HOOK_V1";

struct Handoff {
  std::vector<std::string> argv;
  std::vector<std::string> env;  // the whole environment, "KEY=VALUE" entries
  std::string cwd;
};

namespace detail {
inline void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put_string(std::string& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out += s;
}
inline void put_list(std::string& out, const std::vector<std::string>& items) {
  put_u32(out, static_cast<uint32_t>(items.size()));
  for (const auto& s : items) put_string(out, s);
}

// A frame: the payload's u32 length, then the payload.
inline std::string frame(const std::string& payload) {
  std::string out;
  put_u32(out, static_cast<uint32_t>(payload.size()));
  return out + payload;
}

// Reads the payload front to back; any short read marks it bad.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == data_.size(); }
  uint32_t u32() {
    if (!need(4)) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(data_[pos_ + i])) << (8 * i);
    pos_ += 4;
    return v;
  }
  std::string_view bytes(size_t n) {
    if (!need(n)) return {};
    std::string_view v = data_.substr(pos_, n);
    pos_ += n;
    return v;
  }
  std::string string() { return std::string(bytes(u32())); }
  std::vector<std::string> list() {
    const uint32_t n = u32();
    std::vector<std::string> out;
    if (n > data_.size()) ok_ = false;  // each item takes at least 4 bytes: a count this big lies
    for (uint32_t i = 0; ok_ && i < n; ++i) out.push_back(string());
    return out;
  }

 private:
  bool need(size_t n) {
    if (!ok_ || data_.size() - pos_ < n) ok_ = false;
    return ok_;
  }
  std::string_view data_;
  size_t pos_ = 0;
  bool ok_ = true;
};
}  // namespace detail

// The whole frame: length prefix and payload.
inline std::string encode_handoff(const Handoff& h) {
  std::string payload(kMagic, sizeof kMagic);
  payload.push_back(static_cast<char>(kVersion));
  detail::put_list(payload, h.argv);
  detail::put_list(payload, h.env);
  detail::put_string(payload, h.cwd);
  return detail::frame(payload);
}

// A prepare frame: length prefix, then magic "DDPS", version, the worker's argv (the script it
// runs up to its standby point; the handoff that follows carries the same argv).
inline std::string encode_prepare(const std::vector<std::string>& argv) {
  std::string payload(kPrepareMagic, sizeof kPrepareMagic);
  payload.push_back(static_cast<char>(kVersion));
  detail::put_list(payload, argv);
  return detail::frame(payload);
}

// The payload length from a frame's first 4 bytes (nullopt: more than kMaxPayload).
inline std::optional<uint32_t> payload_length(std::string_view prefix4) {
  detail::Reader r(prefix4);
  const uint32_t n = r.u32();
  if (!r.ok() || n > kMaxPayload) return std::nullopt;
  return n;
}

// The payload (without its length prefix); nullopt and *error set when it is not a
// handoff of this version.
inline std::optional<Handoff> decode_handoff(std::string_view payload, std::string* error) {
  auto fail = [&](const char* why) -> std::optional<Handoff> {
    if (error) *error = why;
    return std::nullopt;
  };
  detail::Reader r(payload);
  if (r.bytes(sizeof kMagic) != std::string_view(kMagic, sizeof kMagic)) return fail("not a standby handoff (magic)");
  const std::string_view version = r.bytes(1);
  if (!r.ok() || static_cast<uint8_t>(version[0]) != kVersion)
    return fail("standby handoff of another version: the launcher and this program differ");
  Handoff h;
  h.argv = r.list();
  h.env = r.list();
  h.cwd = r.string();
  if (!r.ok()) return fail("truncated standby handoff");
  if (!r.at_end()) return fail("standby handoff with trailing bytes");
  if (h.argv.empty()) return fail("standby handoff without argv");
  return h;
}

}  // namespace ddp::standby
