// Single-precision matrix products for the linear and matmul kernels: packed, cache-blocked
// and register-blocked, on the thread pool.
//
// Every output element is one float32 sum that starts at +0 and adds the rounded float32
// products a[i][p]·b[p][j] for p = 0, 1, ..., k-1 in that order (a multiply, then an add:
// never a fused multiply-add). Blocking only decides which outputs are computed together,
// never the order of one output's terms, and each output is computed by one thread, so the
// result does not depend on the instruction set, the blocking or the number of threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace edgert::kernels {

// How the right-hand operand is stored.
enum class RightLayout {
  KByN,  // b[p * n + j]: a [K, N] matrix (matmul)
  NByK,  // b[j * k + p]: the transpose of a [N, K] matrix (linear's weight)
};

// One product of a batch: a [m, k] and c [m, n] are contiguous row-major. row_bias, when
// set, holds m values, one added to each row of this product's output (a convolution's
// bias per output channel).
struct GemmOperands {
  const float* a;
  const float* b;
  float* c;
  const float* row_bias = nullptr;
};

// Applied to each output c[i][j] after its sum: + bias[j] (when bias is set), + row_bias[i]
// (when the product has one), then relu.
struct GemmEpilogue {
  const float* bias = nullptr;
  bool relu = false;
};

// c = a · b (+ epilogue) for every entry, all of shape m×k times k×n.
void gemm(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k,
          RightLayout layout, const GemmEpilogue& epilogue);

// Produces the right operand block by block instead of reading a stored b, so that an
// operand computed from another tensor (a convolution's im2col matrix) is never
// materialized whole. pack writes b[depth_begin + p][column + j] of product `entry` for
// p < depth, j < columns at packed[(j / width) * width * depth + p * width + j % width]:
// panels `width` columns wide, each p-major, and zeros for j in [columns, round_up(columns,
// width)).
struct RightPacker {
  void (*pack)(const void* context, size_t entry, int64_t depth_begin, int64_t depth,
               int64_t column, int64_t columns, int64_t width, float* packed);
  const void* context;
};

// gemm with b supplied by `packer` (the entries' b is not read); the same sums, in the
// same order, as gemm on the materialized b.
void gemm_packed_right(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k,
                       const RightPacker& packer, const GemmEpilogue& epilogue);

// A register-blocked kernel: c[i][j] for i < rows, j < columns, from `depth` steps of packed
// panels: a holds a[p][i] at a[p * rows + i], b holds b[p][j] at b[p * columns + j]. When
// `accumulate` is set the sums continue from c's values, otherwise they start at +0.
struct MicroKernel {
  int rows;
  int columns;
  void (*run)(int64_t depth, const float* a, const float* b, float* c, int64_t ldc,
              bool accumulate);
  // Copies an 8×8 block transposed: target[c * target_stride + r] = source[r *
  // source_stride + c]; packing uses it where panels are 8 wide. Null: element by element.
  void (*transpose8)(const float* source, int64_t source_stride, float* target,
                     int64_t target_stride) = nullptr;
};

#if defined(__x86_64__)
MicroKernel avx2_micro_kernel();
MicroKernel avx512_micro_kernel();
#endif

}  // namespace edgert::kernels
