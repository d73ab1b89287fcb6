// contract/crc32.hpp: the carry-less multiply path and the slicing-by-8 fallback give zlib's
// CRC-32 for every length 0..300 at every alignment, for large random buffers, and when
// continued (crc32(b, crc32(a)) == crc32(a + b)). zlib itself is the reference when the build
// found it (DDP_TEST_HAVE_ZLIB); the known vectors hold either way.
#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "contract/crc32.hpp"

#if DDP_TEST_HAVE_ZLIB
#include <zlib.h>
#endif

using ddp::crc::crc32;
using ddp::crc::crc32_portable;

namespace {

// Bit by bit, straight from the definition: the slowest and plainest reference.
uint32_t crc32_bitwise(const unsigned char* p, size_t len, uint32_t crc) {
  uint32_t c = ~crc;
  while (len--) {
    c ^= *p++;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
  }
  return ~c;
}

uint32_t reference(const unsigned char* p, size_t len, uint32_t crc) {
#if DDP_TEST_HAVE_ZLIB
  return static_cast<uint32_t>(::crc32(crc, p, static_cast<uInt>(len)));
#else
  return crc32_bitwise(p, len, crc);
#endif
}

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> out(n);
  for (auto& b : out) b = static_cast<unsigned char>(gen());
  return out;
}

}  // namespace

TEST_CASE("crc32: known vectors (zlib.crc32's values)") {
  const std::string check = "123456789";
  CHECK(crc32(check.data(), check.size()) == 0xCBF43926u);
  CHECK(crc32("", 0) == 0u);
  CHECK(crc32("", 0, 0x12345678u) == 0x12345678u);
  const std::string fox = "The quick brown fox jumps over the lazy dog";
  CHECK(crc32(fox.data(), fox.size()) == 0x414FA339u);
  const std::vector<unsigned char> zeros(4096, 0);
  CHECK(crc32(zeros.data(), zeros.size()) == 0xC71C0011u);  // python3 -c 'import zlib; zlib.crc32(bytes(4096))'
  CHECK(crc32_bitwise(zeros.data(), zeros.size(), 0) == 0xC71C0011u);
}

TEST_CASE("crc32: every length 0..300 at every alignment equals the reference") {
  INFO("carry-less multiply on this CPU: " << ddp::crc::clmul_available());
  const auto buf = random_bytes(300 + 64, 1);
  int mismatches = 0;
  for (size_t align = 0; align < 64; ++align)
    for (size_t len = 0; len <= 300; ++len) {
      const unsigned char* p = buf.data() + align;
      const uint32_t seed = static_cast<uint32_t>(len * 2654435761u);
      const uint32_t want = reference(p, len, seed);
      if (crc32(p, len, seed) != want || crc32_portable(p, len, seed) != want) ++mismatches;
    }
  CHECK(mismatches == 0);
}

TEST_CASE("crc32: large random buffers at every alignment, and continued") {
  const auto buf = random_bytes((1 << 20) + 64, 2);
  for (size_t align = 0; align < 16; ++align) {
    const size_t len = (1 << 20) - align * 37;  // lengths that are not multiples of 16 too
    const unsigned char* p = buf.data() + align;
    const uint32_t want = reference(p, len, 0);
    CHECK(crc32(p, len) == want);
    CHECK(crc32_portable(p, len) == want);
    for (const size_t cut : {size_t(0), size_t(1), size_t(63), size_t(64), size_t(1000), len / 2, len}) {
      CHECK(crc32(p + cut, len - cut, crc32(p, cut)) == want);
      CHECK(crc32(p + cut, len - cut, crc32_portable(p, cut)) == want);
    }
  }
}
