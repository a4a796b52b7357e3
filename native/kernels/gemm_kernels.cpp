// The micro-kernels of the matrix products (gemm_kernels.hpp), written once as templates over
// simd.hpp's vector types with the register block's shape as template parameters, and
// instantiated in functions compiled for each instruction set (target attributes): AVX-512
// (16 rows × 16 columns in zmm registers), AVX2 (6 × 16 in ymm) and the baseline (SSE2 on
// x86-64: 4 × 8; NEON on aarch64: 8 × 8). Products and sums stay separate operations
// (-ffp-contract=off): a fused multiply-add would round differently from the other paths.
//
// The shapes were measured on AMD Zen 4 (benchmarks/kernels.py, docs/kernels.md): there a
// zmm kernel reaches the multiply-add peak only with one column vector per row (16 × 16
// ran at the FMA kernel's 58 G multiply-adds per second, 8 × 32 at 41), while the ymm 6 ×
// 16 runs at the peak too.
#include "gemm_kernels.hpp"

#include "isa.hpp"
#include "simd.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace edgert::kernels {
namespace {

// ---------------------------------------------------------------- the templates

// A tile of Rows × (Vectors · lanes) outputs, a read from panels of height `Height` (the
// kernel's full row count, also when this instance computes fewer rows).
template <class V, int Rows, int Vectors, int Height>
EDGERT_SIMD_INLINE void multiply_tile(int64_t depth, const float* a, const float* b, float* c, int64_t ldc,
                                      bool accumulate) {
  constexpr int kLanes = simd::lanes_of<V>;
  V sums[Rows][Vectors];
#pragma GCC unroll 16
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < Vectors; ++v) sums[i][v] = accumulate ? simd::load<V>(c + i * ldc + v * kLanes) : V{};
  }
  for (int64_t p = 0; p < depth; ++p) {
    V right[Vectors];
#pragma GCC unroll 4
    for (int v = 0; v < Vectors; ++v) right[v] = simd::load<V>(b + v * kLanes);
#pragma GCC unroll 16
    for (int i = 0; i < Rows; ++i) {
      const V left = simd::splat<V>(a[i]);
#pragma GCC unroll 4
      for (int v = 0; v < Vectors; ++v) sums[i][v] = sums[i][v] + left * right[v];
    }
    a += Height;
    b += Vectors * kLanes;
  }
#pragma GCC unroll 16
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int v = 0; v < Vectors; ++v) simd::store(c + i * ldc + v * kLanes, sums[i][v]);
  }
}

// Rows rows of x times a strip of Vectors vectors of b's columns (gemm_kernels.hpp,
// RowsKernel), b in panels `Width` columns wide.
template <class V, int Rows, int Vectors, int Width>
EDGERT_SIMD_INLINE void multiply_rows(int64_t depth, const float* x, int64_t x_stride, const float* b,
                                      int64_t panel_stride, int64_t step, float* out, int64_t out_stride) {
  constexpr int kLanes = simd::lanes_of<V>;
  static_assert(Width % kLanes == 0, "a vector never straddles two panels");
  const float* columns[Vectors];
  V sums[Rows][Vectors];
#pragma GCC unroll 8
  for (int v = 0; v < Vectors; ++v) {
    columns[v] = b + v * kLanes / Width * panel_stride + v * kLanes % Width;
#pragma GCC unroll 4
    for (int r = 0; r < Rows; ++r) sums[r][v] = V{};
  }
  for (int64_t p = 0; p < depth; ++p) {
    V left[Rows];
#pragma GCC unroll 4
    for (int r = 0; r < Rows; ++r) left[r] = simd::splat<V>(x[r * x_stride + p]);
#pragma GCC unroll 8
    for (int v = 0; v < Vectors; ++v) {
      const V right = simd::load<V>(columns[v] + p * step);
#pragma GCC unroll 4
      for (int r = 0; r < Rows; ++r) sums[r][v] = sums[r][v] + left[r] * right;
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < Vectors; ++v) simd::store(out + r * out_stride + v * kLanes, sums[r][v]);
  }
}

// ---------------------------------------------------------------- one table per instruction set

// The shape of an instruction set's kernels: Shape::tile<R> and Shape::rows<R, Vectors> are
// the template instances, compiled for that instruction set (the target attribute of each
// Shape's two functions), and strip_vectors(r) the vectors of b a strip of r rows covers
// (as many accumulators as the registers hold beside the operands).
template <class Shape>
MicroKernel kernels_of() {
  MicroKernel kernel{};
  kernel.rows = Shape::kRows;
  kernel.columns = Shape::kVectors * simd::lanes_of<typename Shape::V>;
  kernel.tile = Shape::template tile<Shape::kRows>;
  kernel.half_tile = Shape::template tile<Shape::kRows / 2>;
  kernel.strips[0] = Shape::template rows<1, Shape::strip_vectors(1)>;
  kernel.strips[1] = Shape::template rows<2, Shape::strip_vectors(2)>;
  kernel.strips[2] = Shape::template rows<3, Shape::strip_vectors(3)>;
  kernel.strips[3] = Shape::template rows<4, Shape::strip_vectors(4)>;
  for (int r = 1; r <= kMaxBatchRows; ++r) kernel.strip_panels[r - 1] = Shape::strip_vectors(r) / Shape::kVectors;
  kernel.panel_rows[0] = Shape::template rows<1, Shape::kVectors>;
  kernel.panel_rows[1] = Shape::template rows<2, Shape::kVectors>;
  kernel.panel_rows[2] = Shape::template rows<3, Shape::kVectors>;
  kernel.panel_rows[3] = Shape::template rows<4, Shape::kVectors>;
  kernel.depth_block = Shape::kDepthBlock;
  kernel.row_block = Shape::kRowBlock;
  kernel.column_block = Shape::kColumnBlock;
  return kernel;
}

// Each Shape: V, kRows, kVectors (the tile: kRows × kVectors vectors), the blocking, and the
// two instantiating functions.
#define EDGERT_GEMM_INSTANCES(attributes)                                                                              \
  template <int R>                                                                                                     \
  attributes static void tile(int64_t depth, const float* a, const float* b, float* c, int64_t ldc, bool accumulate) { \
    multiply_tile<V, R, kVectors, kRows>(depth, a, b, c, ldc, accumulate);                                             \
  }                                                                                                                    \
  template <int R, int Vectors>                                                                                        \
  attributes static void rows(int64_t depth, const float* x, int64_t x_stride, const float* b, int64_t panel_stride,   \
                              int64_t step, float* out, int64_t out_stride) {                                          \
    multiply_rows<V, R, Vectors, kVectors * simd::lanes_of<V>>(depth, x, x_stride, b, panel_stride, step, out,         \
                                                               out_stride);                                            \
  }

#if defined(__x86_64__)
struct Avx512Shape {
  using V = simd::Width<16>::Float;
  static constexpr int kRows = 16, kVectors = 1;
  static constexpr int64_t kDepthBlock = 256, kRowBlock = 128, kColumnBlock = 256;
  static constexpr int strip_vectors(int) { return 4; }  // 4..16 of the 32 registers
  EDGERT_GEMM_INSTANCES(__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"), flatten)))
};

struct Avx2Shape {
  using V = simd::Width<8>::Float;
  static constexpr int kRows = 6, kVectors = 2;
  static constexpr int64_t kDepthBlock = 256, kRowBlock = 120, kColumnBlock = 256;
  static constexpr int strip_vectors(int rows) { return rows <= 2 ? 4 : 2; }  // of 16 registers
  EDGERT_GEMM_INSTANCES(__attribute__((target("avx2"), flatten)))
};

__attribute__((target("avx2"))) void transpose8_avx2(const float* source, int64_t source_stride, float* target,
                                                     int64_t target_stride) {
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
#endif

struct BaselineShape {
  using V = simd::Width<4>::Float;
#if defined(__aarch64__)
  static constexpr int kRows = 8, kVectors = 2;  // 16 accumulators of NEON's 32 registers
  static constexpr int strip_vectors(int) { return 4; }
#else
  static constexpr int kRows = 4, kVectors = 2;  // 8 accumulators of SSE2's 16 registers
  static constexpr int strip_vectors(int rows) { return rows <= 2 ? 4 : 2; }
#endif
  static constexpr int64_t kDepthBlock = 256, kRowBlock = 128, kColumnBlock = 256;
  EDGERT_GEMM_INSTANCES(__attribute__((flatten)))
};

#undef EDGERT_GEMM_INSTANCES

MicroKernel select_micro_kernel() {
  switch (kernel_isa()) {
#if defined(__x86_64__)
    case Isa::Avx512: {
      MicroKernel kernel = kernels_of<Avx512Shape>();
      kernel.transpose8 = transpose8_avx2;
      return kernel;
    }
    case Isa::Avx2: {
      MicroKernel kernel = kernels_of<Avx2Shape>();
      kernel.transpose8 = transpose8_avx2;
      return kernel;
    }
#endif
    default: return kernels_of<BaselineShape>();
  }
}

}  // namespace

const MicroKernel& micro_kernel() {
  static const MicroKernel chosen = select_micro_kernel();
  return chosen;
}

}  // namespace edgert::kernels
