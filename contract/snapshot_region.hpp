// The snapshot region's format: a file the launcher creates per local rank (its path in
// DDP_LAUNCH_SNAPSHOT_FILE) and the worker fills with its newest training state
// (docs/snapshots.md). A 4 KiB header, then two payload slots; a slot's checksum is written
// last, so a slot torn by a crash mid-copy never validates and readers take the newest
// complete one. The checksum covers the descriptor and the payload, or only the payload's first
// `checked` bytes (kPrefixChecked: a tensor table's head; its tensor bytes are covered by the
// order of the writes alone: the descriptor is emptied before them and completed after them). Pure C++17, no
// dependencies, no I/O (contract/snapshot_file.hpp does the I/O); python/ddp_snapshot.py mirrors it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "contract/crc32.hpp"

namespace ddp::snapshot {

inline constexpr uint32_t kMagic = 0x53504444;  // "DDPS" in little-endian bytes
inline constexpr uint32_t kVersion = 2;         // 2: the checksum may cover a prefix
inline constexpr uint64_t kHeaderSize = 4096;   // payloads start at or after this offset
inline constexpr uint64_t kAlign = 4096;        // payload offsets are multiples of this
inline constexpr const char* kEnvVar = "DDP_LAUNCH_SNAPSHOT_FILE";

// One slot's descriptor. `checksum` is the CRC-32 (IEEE, zlib's) of the descriptor's bytes
// but the checksum itself (0-32, 36-48) followed by the payload's covered bytes: all of it, or
// with kPrefixChecked in `flags` the first `checked`. seq 0: empty.
struct Slot {
  uint64_t seq;       // 0: write order, 1 for the first snapshot; 0 = empty or being written
  uint64_t step;      // 8: the training step the payload holds (the writer's number)
  uint64_t offset;    // 16: where the payload starts in the file
  uint64_t length;    // 24: payload bytes
  uint32_t checksum;  // 32: written last
  uint32_t flags;     // 36: kPrefixChecked or 0
  uint64_t checked;   // 40: with kPrefixChecked: the payload bytes the checksum covers (<= length)
};
static_assert(sizeof(Slot) == 48, "the slot descriptor is 48 bytes");
inline constexpr size_t kSlotChecksummed = 32;  // the descriptor's bytes before the checksum
inline constexpr uint32_t kPrefixChecked = 1;   // flags: the checksum covers `checked` payload bytes

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

// The checksum: zlib's CRC-32 (contract/crc32.hpp), continuable.
using crc::crc32;

// The payload bytes a slot's checksum covers.
inline uint64_t checked_length(const Slot& s) {
  return (s.flags & kPrefixChecked) != 0 && s.checked < s.length ? s.checked : s.length;
}

// The checksum a slot must carry for `payload` (at least checked_length(s) bytes of it).
inline uint32_t slot_checksum(const Slot& s, const void* payload) {
  constexpr size_t kAfter = offsetof(Slot, flags);
  const uint32_t descriptor =
      crc32(reinterpret_cast<const char*>(&s) + kAfter, sizeof(Slot) - kAfter, crc32(&s, kSlotChecksummed));
  return crc32(payload, checked_length(s), descriptor);
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
