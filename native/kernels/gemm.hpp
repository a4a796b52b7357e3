// Single-precision matrix products for the linear, matmul, conv2d and attention kernels:
// packed, cache-blocked and register-blocked, on the thread pool.
//
// Every output element is one float32 sum that starts at +0 and adds the rounded float32
// products a[i][p]·b[p][j] for p = 0, 1, ..., k-1 in that order (a multiply, then an add:
// never a fused multiply-add). Blocking only decides which outputs are computed together,
// never the order of one output's terms, and each output is computed by one thread, so the
// result does not depend on the instruction set, the blocking, the packing or the number of
// threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "edgert/tensor.hpp"
#include "linear.hpp"

namespace edgert::kernels {

// How a stored right-hand operand is laid out.
enum class RightLayout {
  KByN,  // b[p * n + j]: a [K, N] matrix (matmul)
  NByK,  // b[j * k + p]: the transpose of a [N, K] matrix (linear's weight)
};

// One product of a batch: a [m, k] and c [m, n] are contiguous row-major. row_bias, when
// set, holds m values, one added to each row of this product's output (a convolution's
// bias per output channel). packed_a, when set, is this product's a already in panels
// (PackedPanels::matrix of a left operand) and a is not read; packed_b likewise for b.
struct GemmOperands {
  const float* a;
  const float* b;
  float* c;
  const float* row_bias = nullptr;
  const float* packed_a = nullptr;
  const float* packed_b = nullptr;
};

// Applied to each output c[i][j] after its sum: + bias[j] (when bias is set), + row_bias[i]
// (when the product has one), then the activation (activation.hpp).
struct GemmEpilogue {
  const float* bias = nullptr;
  FusedActivation activation;
};

// c = a · b (+ epilogue) for every entry, all of shape m×k times k×n. Entries may carry
// packed_a and packed_b (all of them or none, per side).
void gemm(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k, RightLayout layout,
          const GemmEpilogue& epilogue);

// Produces the right operand block by block instead of reading a stored b, so that an
// operand computed from another tensor (a convolution's im2col matrix) is never
// materialized whole. pack writes b[depth_begin + p][column + j] of product `entry` for
// p < depth, j < columns at packed[(j / width) * width * depth + p * width + j % width]:
// panels `width` columns wide, each p-major, and zeros for j in [columns, round_up(columns,
// width)).
struct RightPacker {
  void (*pack)(const void* context, size_t entry, int64_t depth_begin, int64_t depth, int64_t column, int64_t columns,
               int64_t width, float* packed);
  const void* context;
};

// gemm with b supplied by `packer` (the entries' b is not read); the same sums, in the
// same order, as gemm on the materialized b. Entries may carry packed_a.
void gemm_packed_right(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k,
                       const RightPacker& packer, const GemmEpilogue& epilogue);

// An operand stored once, over its whole depth, in the panels the micro-kernel of this
// process reads (what prepare makes of a constant weight): `matrices` matrices (a
// convolution's groups), each `extent` rows of a left operand (or columns of a right one)
// cut into panels of `width`, the last zero-padded. Panel q of matrix g starts at
// matrix(g) + q * depth * width and holds element (p, t) of the panel at p * width + t.
struct PackedPanels {
  int64_t matrices = 0;
  int64_t extent = 0;
  int64_t depth = 0;
  int64_t width = 0;
  Tensor storage;

  int64_t panels() const { return (extent + width - 1) / width; }
  const float* matrix(int64_t index) const { return storage.data_as<float>() + index * panels() * depth * width; }
};

// The floats pack_left_rows writes for `rows` rows of `depth` elements.
int64_t left_panels_size(int64_t rows, int64_t depth);
// a [rows, depth] (row-major) as the left panels of this process's micro-kernel, written to
// `packed` (left_panels_size floats; the last panel's missing rows zero): what
// GemmOperands::packed_a reads, for a caller that packs an operand into its own memory (a
// recurrent step's h, each step, with no allocation).
void pack_left_rows(const float* a, int64_t rows, int64_t depth, float* packed);
// a [matrices][extent, depth] (row-major, one matrix after the other) as left panels.
PackedPanels pack_left_panels(const float* a, int64_t matrices, int64_t extent, int64_t depth);
// b [depth, extent] (KByN) or its transpose [extent, depth] (NByK) as right panels.
PackedPanels pack_right_panels(const float* b, RightLayout layout, int64_t extent, int64_t depth);
// Whether `panels` were packed for this process's micro-kernel as a left (or right) operand.
bool fits_left_kernel(const PackedPanels& panels);
bool fits_right_kernel(const PackedPanels& panels);

}  // namespace edgert::kernels
