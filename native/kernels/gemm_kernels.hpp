// The register-blocked kernels gemm.cpp drives (gemm_kernels.cpp): one template, compiled
// for each instruction set the process may choose (AVX-512, AVX2, the baseline: SSE2 or
// NEON), with the register block's shape as template parameters. Every kernel adds each
// product to its sum as a multiply and then an add, in increasing p, so all of them give
// the same bits.
#pragma once

#include <cstdint>

namespace edgert::kernels {

// Tiles: c[i][j] for i < the kernel's rows, j < its columns, from `depth` steps of packed
// panels: a holds a[p][i] at a[p * height + i] (height: the left panels' height, which is
// the kernel's full row count), b holds b[p][j] at b[p * columns + j]. With `accumulate` the
// sums continue from c's values, otherwise they start at +0.
using TileKernel = void (*)(int64_t depth, const float* a, const float* b, float* c, int64_t ldc, bool accumulate);

// Small batches, b read where it lies: out[r * out_stride + j] = Σ_p x[r * x_stride + p] ·
// b(p, j) from +0, for r < the kernel's rows and j < its strip, where b(p, j) is at
// b + (j / width) * panel_stride + p * step + j % width (width: the right panels' width).
// Packed right panels have panel_stride = depth · width and step = width; a stored [K, N]
// matrix has panel_stride = width and step = N.
using RowsKernel = void (*)(int64_t depth, const float* x, int64_t x_stride, const float* b, int64_t panel_stride,
                            int64_t step, float* out, int64_t out_stride);

// Batches of up to this many rows take the RowsKernel path.
constexpr int kMaxBatchRows = 4;

// Copies an 8×8 block transposed: target[c * target_stride + r] = source[r * source_stride + c].
using TransposeKernel = void (*)(const float* source, int64_t source_stride, float* target, int64_t target_stride);

struct MicroKernel {
  int rows;     // of a tile: the left panels' height
  int columns;  // of a tile: the right panels' width
  TileKernel tile;
  // A tile's upper half (rows / 2 rows, the same panels): for the last rows of a product.
  TileKernel half_tile;
  // strips[r - 1]: r rows by strip_panels[r - 1] panels; panel_rows[r - 1]: r rows by one
  // panel (the ends of a row).
  RowsKernel strips[kMaxBatchRows];
  int strip_panels[kMaxBatchRows];
  RowsKernel panel_rows[kMaxBatchRows];
  TransposeKernel transpose8;  // null: packing copies element by element

  // Cache blocking (gemm.cpp): the k slice of one pass, the rows of a block of packed a and
  // the columns of a block of b packed per block.
  int64_t depth_block;
  int64_t row_block;
  int64_t column_block;
};

// The kernels of the instruction set kernel_isa() chose.
const MicroKernel& micro_kernel();

}  // namespace edgert::kernels
