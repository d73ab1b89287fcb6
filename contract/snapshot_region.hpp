// The snapshot region's format: a file the launcher creates per local rank (its path in
// DDP_LAUNCH_SNAPSHOT_FILE) and the worker fills with its newest training state
// (docs/snapshots.md). A 4 KiB header, then two payload slots; a slot's checksum is written
// last, so a slot torn by a crash mid-copy never validates and readers take the newest
// complete one. Pure C++17, no dependencies, no I/O (contract/snapshot_file.hpp does the
// I/O); python/ddp_snapshot.py mirrors it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace ddp::snapshot {

inline constexpr uint32_t kMagic = 0x53504444;  // "DDPS" in little-endian bytes
inline constexpr uint32_t kVersion = 1;
inline constexpr uint64_t kHeaderSize = 4096;  // payloads start at or after this offset
inline constexpr uint64_t kAlign = 4096;       // payload offsets are multiples of this
inline constexpr const char* kEnvVar = "DDP_LAUNCH_SNAPSHOT_FILE";

// One slot's descriptor. `checksum` is the CRC-32 (IEEE, zlib's) of the descriptor's first
// 32 bytes (seq, step, offset, length) followed by the payload. seq 0: empty.
struct Slot {
  uint64_t seq;       // 0: write order, 1 for the first snapshot; 0 = empty or being written
  uint64_t step;      // 8: the training step the payload holds (the writer's number)
  uint64_t offset;    // 16: where the payload starts in the file
  uint64_t length;    // 24: payload bytes
  uint32_t checksum;  // 32: written last
  uint32_t reserved;  // 36: zero
  uint64_t pad;       // 40: zero
};
static_assert(sizeof(Slot) == 48, "the slot descriptor is 48 bytes");
inline constexpr size_t kSlotChecksummed = 32;  // bytes of a descriptor the checksum covers

// Native byte order (little-endian on every platform the project builds for).
struct Header {
  uint32_t magic;        // 0: kMagic
  uint32_t version;      // 4: kVersion
  uint64_t header_size;  // 8: kHeaderSize
  Slot slots[2];         // 16, 64
  uint8_t reserved[16];  // 112: zero
};
static_assert(sizeof(Header) == 128, "the snapshot header is 128 bytes");
static_assert(offsetof(Header, slots) == 16, "layout is part of the format");

inline Header empty_header() {
  Header h{};
  h.magic = kMagic;
  h.version = kVersion;
  h.header_size = kHeaderSize;
  return h;
}

inline bool valid_header(const Header& h) {
  return h.magic == kMagic && h.version == kVersion && h.header_size == kHeaderSize;
}

// The slot the next snapshot goes to: the empty or older one (the newer one stays intact).
inline int slot_to_write(const Header& h) { return h.slots[0].seq <= h.slots[1].seq ? 0 : 1; }

inline uint64_t align_up(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Where slot `target`'s payload of `length` bytes goes: right after the header if it fits
// before the other slot's payload, else right after that payload. It never overlaps the
// other slot, so a crash while writing leaves the other slot readable. With payloads of one
// size the file settles at header + two payloads.
inline uint64_t payload_offset(const Header& h, int target, uint64_t length) {
  const Slot& other = h.slots[1 - target];
  if (other.seq == 0 || kHeaderSize + length <= other.offset) return kHeaderSize;
  return align_up(other.offset + other.length);
}

// --- CRC-32 (IEEE 802.3, reflected 0xEDB88320; the value of zlib.crc32), slicing by 8 ---
namespace detail {
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;
inline const CrcTables& crc_tables() {
  static const CrcTables tables = [] {
    CrcTables t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    return t;
  }();
  return tables;
}
}  // namespace detail

// Continues `crc` (0 to start) over `len` bytes: crc32(b, crc32(a)) == crc32(a + b).
inline uint32_t crc32(const void* data, size_t len, uint32_t crc = 0) {
  const auto& t = detail::crc_tables();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
  while (len >= 8) {
    const uint32_t lo = c ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
    const uint32_t hi = uint32_t(p[4]) | uint32_t(p[5]) << 8 | uint32_t(p[6]) << 16 | uint32_t(p[7]) << 24;
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

// The checksum a slot must carry for `payload`.
inline uint32_t slot_checksum(const Slot& s, const void* payload) {
  return crc32(payload, s.length, crc32(&s, kSlotChecksummed));
}

// The slots in the order a reader tries them, newest first; a slot counts only if
// slot_in_file (not empty, inside a file of `file_size` bytes) and its payload passes
// slot_checksum.
inline std::array<int, 2> slots_newest_first(const Header& h) {
  return h.slots[0].seq >= h.slots[1].seq ? std::array<int, 2>{0, 1} : std::array<int, 2>{1, 0};
}
inline bool slot_in_file(const Slot& s, uint64_t file_size) {
  return s.seq != 0 && s.offset >= kHeaderSize && s.offset <= file_size && s.length <= file_size - s.offset;
}

}  // namespace ddp::snapshot
