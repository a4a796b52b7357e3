// CRC-32 (the polynomial of zlib, gzip, PNG and zip: reflected 0xEDB88320, initial value and
// final XOR 0xFFFFFFFF), the program format's checksum (docs/program-format.md, "Checksum").
//
// Three ways, chosen at run time by what the processor has, all giving the same value:
// x86-64 with PCLMULQDQ folds 64 bytes per step with carry-less multiplication (Intel's
// "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction", 2009: folding
// by 1024, 512 and 128 bits, then a Barrett reduction; each folding constant is the bit-reversed
// x^(d+32) or x^(d-32) mod P, shifted left once, for a distance of d bits); aarch64 with the CRC32
// extension uses its CRC32X instruction, 8 bytes at a time; anything else slices by 16
// (sixteen table lookups per 16 bytes).
#include <array>
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_acle.h>
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif
#endif

#include "edgert/runtime.hpp"
#include "program_format.hpp"

namespace edgert {
namespace {

using Tables = std::array<std::array<uint32_t, 256>, 16>;

Tables make_tables() {
  Tables tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1u) ? (crc >> 1) ^ 0xEDB88320u : crc >> 1;
    tables[0][byte] = crc;
  }
  for (size_t slice = 1; slice < tables.size(); ++slice) {
    for (size_t byte = 0; byte < 256; ++byte) {
      const uint32_t previous = tables[slice - 1][byte];
      tables[slice][byte] = (previous >> 8) ^ tables[0][previous & 0xFFu];
    }
  }
  return tables;
}

uint32_t load_le32(const uint8_t* bytes) {
  return uint32_t{bytes[0]} | uint32_t{bytes[1]} << 8 | uint32_t{bytes[2]} << 16 | uint32_t{bytes[3]} << 24;
}

// The state `crc` (already inverted) after `size` bytes, by table.
uint32_t crc32_tables(uint32_t crc, const uint8_t* bytes, size_t size) {
  static const Tables tables = make_tables();
  const auto& t = tables;
  while (size >= 16) {
    const uint32_t a = load_le32(bytes) ^ crc, b = load_le32(bytes + 4);
    const uint32_t c = load_le32(bytes + 8), d = load_le32(bytes + 12);
    crc = t[15][a & 0xFF] ^ t[14][(a >> 8) & 0xFF] ^ t[13][(a >> 16) & 0xFF] ^ t[12][a >> 24] ^ t[11][b & 0xFF] ^
          t[10][(b >> 8) & 0xFF] ^ t[9][(b >> 16) & 0xFF] ^ t[8][b >> 24] ^ t[7][c & 0xFF] ^ t[6][(c >> 8) & 0xFF] ^
          t[5][(c >> 16) & 0xFF] ^ t[4][c >> 24] ^ t[3][d & 0xFF] ^ t[2][(d >> 8) & 0xFF] ^ t[1][(d >> 16) & 0xFF] ^
          t[0][d >> 24];
    bytes += 16;
    size -= 16;
  }
  while (size-- > 0) crc = (crc >> 8) ^ t[0][(crc ^ *bytes++) & 0xFFu];
  return crc;
}

#if defined(__x86_64__)

bool has_pclmul() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_PCLMUL) != 0 && (c & bit_SSE4_1) != 0;
}

__attribute__((target("sse4.1"))) __m128i load16(const uint8_t* at) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
}

// One fold: the 128 bits x become x.low * k.low ^ x.high * k.high, which is congruent (mod P)
// to x moved forward by the distance the constants stand for, added to the block there.
__attribute__((target("pclmul,sse4.1"))) __m128i fold(__m128i x, __m128i k, __m128i next) {
  const __m128i low = _mm_clmulepi64_si128(x, k, 0x00);
  const __m128i high = _mm_clmulepi64_si128(x, k, 0x11);
  return _mm_xor_si128(_mm_xor_si128(low, high), next);
}

// The state after `size` bytes, size a multiple of 16 and at least 64.
__attribute__((target("pclmul,sse4.1"))) uint32_t crc32_pclmul(uint32_t crc, const uint8_t* bytes, size_t size) {
  const auto load = load16;
  const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);  // 512-bit distance
  const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);  // 128-bit distance
  const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
  const __m128i poly = _mm_set_epi64x(0x01f7011641, 0x01db710641);  // u', P'
  const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);

  const __m128i start = _mm_cvtsi32_si128(static_cast<int>(crc));
  __m128i x1, x2, x3, x4;
  if (size >= 128) {
    // Eight blocks in flight (folding by 1024 bits) keep the multiplier busy; then fold the
    // last four onto the first four.
    const __m128i k1024 = _mm_set_epi64x(0x014a7fe880, 0x01e88ef372);
    __m128i y[8];
    for (int i = 0; i < 8; ++i) y[i] = load(bytes + 16 * i);
    y[0] = _mm_xor_si128(y[0], start);
    bytes += 128;
    size -= 128;
    while (size >= 128) {
      for (int i = 0; i < 8; ++i) y[i] = fold(y[i], k1024, load(bytes + 16 * i));
      bytes += 128;
      size -= 128;
    }
    x1 = fold(y[0], k1k2, y[4]);
    x2 = fold(y[1], k1k2, y[5]);
    x3 = fold(y[2], k1k2, y[6]);
    x4 = fold(y[3], k1k2, y[7]);
  } else {
    x1 = _mm_xor_si128(load(bytes), start);
    x2 = load(bytes + 16);
    x3 = load(bytes + 32);
    x4 = load(bytes + 48);
    bytes += 64;
    size -= 64;
  }
  while (size >= 64) {
    x1 = fold(x1, k1k2, load(bytes));
    x2 = fold(x2, k1k2, load(bytes + 16));
    x3 = fold(x3, k1k2, load(bytes + 32));
    x4 = fold(x4, k1k2, load(bytes + 48));
    bytes += 64;
    size -= 64;
  }
  x1 = fold(x1, k3k4, x2);
  x1 = fold(x1, k3k4, x3);
  x1 = fold(x1, k3k4, x4);
  while (size >= 16) {
    x1 = fold(x1, k3k4, load(bytes));
    bytes += 16;
    size -= 16;
  }
  // 128 bits to 64, then Barrett reduction to 32.
  __m128i x = _mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x10), _mm_srli_si128(x1, 8));
  x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low32), k5, 0x00), _mm_srli_si128(x, 4));
  __m128i t = _mm_clmulepi64_si128(_mm_and_si128(x, low32), poly, 0x10);
  t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), poly, 0x00);
  return static_cast<uint32_t>(_mm_extract_epi32(_mm_xor_si128(x, t), 1));
}

uint32_t crc32_state(uint32_t crc, const uint8_t* bytes, size_t size) {
  static const bool pclmul = has_pclmul();
  if (pclmul && size >= 64) {
    const size_t folded = size & ~size_t{15};
    crc = crc32_pclmul(crc, bytes, folded);
    bytes += folded;
    size -= folded;
  }
  return crc32_tables(crc, bytes, size);
}

#elif defined(__aarch64__)

bool has_crc_instructions() {
#if defined(__APPLE__)
  return true;  // every Apple arm64 processor has the CRC32 extension
#elif defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0;
#else
  return false;
#endif
}

__attribute__((target("+crc"))) uint32_t crc32_arm(uint32_t crc, const uint8_t* bytes, size_t size) {
  while (size >= 8) {
    uint64_t word;
    std::memcpy(&word, bytes, 8);
    crc = __crc32d(crc, word);
    bytes += 8;
    size -= 8;
  }
  while (size-- > 0) crc = __crc32b(crc, *bytes++);
  return crc;
}

uint32_t crc32_state(uint32_t crc, const uint8_t* bytes, size_t size) {
  static const bool instructions = has_crc_instructions();
  return instructions ? crc32_arm(crc, bytes, size) : crc32_tables(crc, bytes, size);
}

#else

uint32_t crc32_state(uint32_t crc, const uint8_t* bytes, size_t size) {
  return crc32_tables(crc, bytes, size);
}

#endif

}  // namespace

uint32_t crc32_update(uint32_t crc, const void* data, size_t size) {
  return ~crc32_state(~crc, static_cast<const uint8_t*>(data), size);
}

uint32_t crc32_tables_only(uint32_t crc, const void* data, size_t size) {
  return ~crc32_tables(~crc, static_cast<const uint8_t*>(data), size);
}

uint32_t program_checksum(const void* data, size_t size) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  if (size <= format::kChecksumOffset) return crc32_update(0, bytes, size);
  uint32_t crc = crc32_update(0, bytes, format::kChecksumOffset);
  const size_t after = format::kChecksumOffset + 4;
  if (size > after) crc = crc32_update(crc, bytes + after, size - after);
  return crc;
}

std::string format_note(uint32_t format_version) {
  if (format_version != 1) return "";
  return "program format version 1 carries no checksum, so corruption of its bytes cannot be "
         "detected; write it again with edgert.export (write_program(read_program(data))) to "
         "get version 2";
}

}  // namespace edgert
