// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320): the value of zlib's crc32 and Python's
// zlib.crc32, continuable (crc32(b, crc32(a)) == crc32(a + b)). On x86-64 CPUs with PCLMULQDQ
// it folds 64 bytes at a time with carry-less multiplies (chosen at run time: no global -m
// flags), else slicing by 8. Pure, header-only, thread-safe; the snapshot region's checksum.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define DDP_CRC32_CLMUL 1
#else
#define DDP_CRC32_CLMUL 0
#endif

namespace ddp::crc {

namespace detail {
using Tables = std::array<std::array<uint32_t, 256>, 8>;
inline const Tables& tables() {
  static const Tables t = [] {
    Tables out{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      out[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) out[s][i] = (out[s - 1][i] >> 8) ^ out[0][out[s - 1][i] & 0xff];
    return out;
  }();
  return t;
}

// Slicing by 8 on the register `c` (the CRC inverted), 8 bytes a step.
inline uint32_t slice8(const unsigned char* p, size_t len, uint32_t c) {
  const Tables& t = tables();
  for (; len >= 8; p += 8, len -= 8) {
    const uint32_t lo = c ^ (uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24);
    const uint32_t hi = uint32_t(p[4]) | uint32_t(p[5]) << 8 | uint32_t(p[6]) << 16 | uint32_t(p[7]) << 24;
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
  }
  while (len--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c;
}

#if DDP_CRC32_CLMUL
// Folding with PCLMULQDQ ("Fast CRC Computation for Generic Polynomials Using PCLMULQDQ",
// Gopal et al., Intel 2009): four 128-bit lanes each advanced 512 bits per multiply pair, then
// folded into one lane, reduced to 64 and to 32 bits (Barrett). The constants are x^k mod P
// for the bit-reflected polynomial. `len` >= 64 and a multiple of 16; `c` is the register.
#define DDP_CRC32_TARGET __attribute__((target("pclmul,sse4.1")))
DDP_CRC32_TARGET inline __m128i load(const unsigned char* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}
// One lane advanced: its low half times k's low, its high half times k's high, plus `next`.
DDP_CRC32_TARGET inline __m128i fold(__m128i x, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}
DDP_CRC32_TARGET inline uint32_t fold_clmul(const unsigned char* p, size_t len, uint32_t c) {
  const __m128i k512 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);  // x^(512+32), x^(512-32) mod P, reflected
  const __m128i k128 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);  // the same for 128 bits
  __m128i a = _mm_xor_si128(load(p), _mm_cvtsi32_si128(static_cast<int>(c)));
  __m128i b = load(p + 16), d = load(p + 32), e = load(p + 48);
  for (p += 64, len -= 64; len >= 64; p += 64, len -= 64) {
    a = fold(a, k512, load(p));
    b = fold(b, k512, load(p + 16));
    d = fold(d, k512, load(p + 32));
    e = fold(e, k512, load(p + 48));
  }
  a = fold(fold(fold(a, k128, b), k128, d), k128, e);
  for (; len >= 16; p += 16, len -= 16) a = fold(a, k128, load(p));
  // 128 -> 64 bits, then 64 -> 32 by Barrett reduction.
  const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
  a = _mm_xor_si128(_mm_srli_si128(a, 8), _mm_clmulepi64_si128(a, k128, 0x10));
  const __m128i k64 = _mm_set_epi64x(0, 0x163cd6124);
  a = _mm_xor_si128(_mm_srli_si128(a, 4), _mm_clmulepi64_si128(_mm_and_si128(a, low32), k64, 0x00));
  const __m128i barrett = _mm_set_epi64x(0x1f7011641, 0x1db710641);  // mu, P
  __m128i t = _mm_and_si128(_mm_clmulepi64_si128(_mm_and_si128(a, low32), barrett, 0x10), low32);
  t = _mm_clmulepi64_si128(t, barrett, 0x00);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(a, t), 1));
}
#undef DDP_CRC32_TARGET
#endif
}  // namespace detail

// Whether crc32() folds with carry-less multiplies on this CPU.
inline bool clmul_available() {
#if DDP_CRC32_CLMUL
  static const bool yes = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  }();
  return yes;
#else
  return false;
#endif
}

// The portable implementation (slicing by 8), the same value as crc32().
inline uint32_t crc32_portable(const void* data, size_t len, uint32_t crc = 0) {
  return ~detail::slice8(static_cast<const unsigned char*>(data), len, ~crc);
}

// Continues `crc` (0 to start) over `len` bytes.
inline uint32_t crc32(const void* data, size_t len, uint32_t crc = 0) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t c = ~crc;
#if DDP_CRC32_CLMUL
  if (len >= 64 && clmul_available()) {
    const size_t folded = len & ~size_t(15);
    c = detail::fold_clmul(p, folded, c);
    p += folded;
    len -= folded;
  }
#endif
  return ~detail::slice8(p, len, c);
}

}  // namespace ddp::crc
