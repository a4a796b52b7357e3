// The x86-64 micro-kernels of gemm.cpp, AVX2 (6×16) and AVX-512 (8×32), and the AVX2 8×8
// transpose their packing uses. Each is compiled
// for its instruction set alone (target attribute) and called only when the processor has
// it. Multiplies and adds stay separate instructions (-ffp-contract=off): FMA would round
// differently from the portable path.
#include "gemm.hpp"

#if defined(__x86_64__)
#include <immintrin.h>

namespace edgert::kernels {
namespace {

constexpr int kAvx2Rows = 6;
constexpr int kAvx512Rows = 8;

__attribute__((target("avx2"))) void avx2_kernel(int64_t depth, const float* a, const float* b,
                                                 float* c, int64_t ldc, bool accumulate) {
  __m256 sums[kAvx2Rows][2];
#pragma GCC unroll 6
  for (int i = 0; i < kAvx2Rows; ++i) {
    sums[i][0] = accumulate ? _mm256_loadu_ps(c + i * ldc) : _mm256_setzero_ps();
    sums[i][1] = accumulate ? _mm256_loadu_ps(c + i * ldc + 8) : _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < depth; ++p) {
    const __m256 right0 = _mm256_load_ps(b);
    const __m256 right1 = _mm256_load_ps(b + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kAvx2Rows; ++i) {
      const __m256 left = _mm256_broadcast_ss(a + i);
      sums[i][0] = _mm256_add_ps(sums[i][0], _mm256_mul_ps(left, right0));
      sums[i][1] = _mm256_add_ps(sums[i][1], _mm256_mul_ps(left, right1));
    }
    a += kAvx2Rows;
    b += 16;
  }
#pragma GCC unroll 6
  for (int i = 0; i < kAvx2Rows; ++i) {
    _mm256_storeu_ps(c + i * ldc, sums[i][0]);
    _mm256_storeu_ps(c + i * ldc + 8, sums[i][1]);
  }
}

__attribute__((target("avx512f"))) void avx512_kernel(int64_t depth, const float* a,
                                                      const float* b, float* c, int64_t ldc,
                                                      bool accumulate) {
  __m512 sums[kAvx512Rows][2];
#pragma GCC unroll 8
  for (int i = 0; i < kAvx512Rows; ++i) {
    sums[i][0] = accumulate ? _mm512_loadu_ps(c + i * ldc) : _mm512_setzero_ps();
    sums[i][1] = accumulate ? _mm512_loadu_ps(c + i * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t p = 0; p < depth; ++p) {
    const __m512 right0 = _mm512_load_ps(b);
    const __m512 right1 = _mm512_load_ps(b + 16);
#pragma GCC unroll 8
    for (int i = 0; i < kAvx512Rows; ++i) {
      const __m512 left = _mm512_set1_ps(a[i]);
      sums[i][0] = _mm512_add_ps(sums[i][0], _mm512_mul_ps(left, right0));
      sums[i][1] = _mm512_add_ps(sums[i][1], _mm512_mul_ps(left, right1));
    }
    a += kAvx512Rows;
    b += 32;
  }
#pragma GCC unroll 8
  for (int i = 0; i < kAvx512Rows; ++i) {
    _mm512_storeu_ps(c + i * ldc, sums[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, sums[i][1]);
  }
}

__attribute__((target("avx2"))) void transpose8_avx2(const float* source, int64_t source_stride,
                                                     float* target, int64_t target_stride) {
  __m256 rows[8], pairs[8], quads[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) rows[i] = _mm256_loadu_ps(source + i * source_stride);
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    pairs[2 * i] = _mm256_unpacklo_ps(rows[2 * i], rows[2 * i + 1]);
    pairs[2 * i + 1] = _mm256_unpackhi_ps(rows[2 * i], rows[2 * i + 1]);
  }
#pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {
    const __m256* in = pairs + 4 * half;
    quads[4 * half] = _mm256_shuffle_ps(in[0], in[2], 0x44);
    quads[4 * half + 1] = _mm256_shuffle_ps(in[0], in[2], 0xee);
    quads[4 * half + 2] = _mm256_shuffle_ps(in[1], in[3], 0x44);
    quads[4 * half + 3] = _mm256_shuffle_ps(in[1], in[3], 0xee);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    _mm256_storeu_ps(target + i * target_stride, _mm256_permute2f128_ps(quads[i], quads[i + 4], 0x20));
    _mm256_storeu_ps(target + (i + 4) * target_stride, _mm256_permute2f128_ps(quads[i], quads[i + 4], 0x31));
  }
}

}  // namespace

MicroKernel avx2_micro_kernel() { return {kAvx2Rows, 16, avx2_kernel, transpose8_avx2}; }
MicroKernel avx512_micro_kernel() { return {kAvx512Rows, 32, avx512_kernel, transpose8_avx2}; }

}  // namespace edgert::kernels
#endif
