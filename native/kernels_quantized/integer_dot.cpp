// dot_rows (integer_dot.hpp): AVX2 (vpmaddwd, 16 products per instruction, two weight rows
// per pass over x) on x86-64 processors that have it, plain C++ elsewhere.
#include "integer_dot.hpp"

#include "../kernels/isa.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace edgert_quantized {
namespace {

// Also the AVX2 kernel's last rows, inlined there (a call from AVX code into baseline code
// costs more than a few rows on some processors).
inline __attribute__((always_inline)) void dot_rows_portable(const int16_t* x, const int16_t* w, int64_t length,
                                                             int64_t rows, int32_t* out) {
  for (int64_t n = 0; n < rows; ++n) {
    const int16_t* row = w + n * length;
    int32_t sum = 0;
    for (int64_t k = 0; k < length; ++k) sum += int32_t{x[k]} * int32_t{row[k]};
    out[n] = sum;
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) int32_t horizontal_sum(__m256i lanes) {
  __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0x4e));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0xb1));
  return _mm_cvtsi128_si32(sum);
}

__attribute__((target("avx2"))) void dot_rows_avx2(const int16_t* x, const int16_t* w, int64_t length, int64_t rows,
                                                   int32_t* out) {
  int64_t n = 0;
  for (; n + 2 <= rows; n += 2) {
    const int16_t* row0 = w + n * length;
    const int16_t* row1 = row0 + length;
    __m256i sum0 = _mm256_setzero_si256(), sum1 = _mm256_setzero_si256();
    for (int64_t k = 0; k < length; k += kDotBlock) {
      const __m256i left = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + k));
      sum0 = _mm256_add_epi32(sum0,
                              _mm256_madd_epi16(left, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row0 + k))));
      sum1 = _mm256_add_epi32(sum1,
                              _mm256_madd_epi16(left, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(row1 + k))));
    }
    out[n] = horizontal_sum(sum0);
    out[n + 1] = horizontal_sum(sum1);
  }
  dot_rows_portable(x, w + n * length, length, rows - n, out + n);
}
#endif

}  // namespace

void dot_rows(const int16_t* x, const int16_t* w, int64_t length, int64_t rows, int32_t* out) {
#if defined(__x86_64__)
  if (edgert::kernels::kernel_isa() != edgert::kernels::Isa::Portable) {
    return dot_rows_avx2(x, w, length, rows, out);
  }
#endif
  dot_rows_portable(x, w, length, rows, out);
}

}  // namespace edgert_quantized
