// The int8 matrix product under the quantized linear and conv2d (docs/kernels.md, "The int8
// GEMM"): exact integer sums, then the documented float32 epilogue, with the instruction
// set chosen at run time (VNNI vpdpbusd, AVX2 / AVX-512 vpmaddwd, aarch64 sdot, portable).
//
// Operands. The left operand is `rows` rows of signed values (int8, or int16 where the
// micro-kernel multiplies int16), row-major with a stride, each row padded with zeros to
// padded_depth(depth). The right operand is `columns` columns of signed int8 values packed
// into panels of kPanelColumns columns: panel q holds, for each group g of four depths, its
// 16 columns' four values at byte q * panel_bytes + g * 64 + column * 4 + (k % 4), each
// stored as value + bias (bias 128: the unsigned byte vpdpbusd wants; bias 0: the signed
// byte sdot wants). Columns past `columns` and depths past `depth` may hold anything: the
// left operand's padding is zero.
//
// Sums. The micro-kernel computes D[i][j] = Σ_k left[i][k] · (right[k][j] + bias) exactly in
// int32 (|D| <= depth · 128 · 255 < 2^31 for depth <= kMaxDepth). With z_l[i] the left
// operand's zero point and z_r[j] the right operand's, the sum the operators want is
//   S = Σ_k (left - z_l) · (right - z_r)
//     = D - (bias + z_r[j]) · Σ_k left[i][k] - z_l[i] · Σ_k (right[k][j] - z_r[j]),
// so the epilogue is told row_sums[i] = Σ_k left[i][k], row_zeros[i] = z_l[i],
// column_offsets[j] = bias + z_r[j] and column_sums[j] = Σ_k (right[k][j] - z_r[j]). When
// every |S| is known to fit in int32 (zero points in int8's range, depth <= 33025) it is
// computed in int32 arithmetic, which wraps but ends on the exact value; otherwise in 64-bit
// arithmetic modulo 2^64, the value the int64 loops it replaces compute. Integer sums do not
// depend on their order, so every instruction set, blocking and thread count gives the
// same S; the float32 steps after it are the same operations on every path:
//   out = float32(S) · (row_scales[i] · column_scales[j]) + bias (row or column), then relu.
#pragma once

#include <cstdint>

#include "../kernels/isa.hpp"
#include "quantized.hpp"

namespace edgert_quantized {

using edgert::kernels::IntegerIsa;

constexpr int64_t kPanelColumns = 16;
constexpr int64_t kGroupDepth = 4;   // depths per 32-bit lane of a panel
constexpr int64_t kDepthBlock = 16;  // the left operand's rows are padded to a multiple
constexpr int64_t kMaxTileRows = 8;
constexpr int64_t kMaxTilePanels = 4;
constexpr int64_t kMaxTileColumns = kMaxTilePanels * kPanelColumns;
constexpr int64_t kMaxDepth = 65536;       // D stays exact in int32
constexpr int64_t kMaxInt32Depth = 33025;  // 33025 · 255² < 2^31: S fits in int32
// Multiply-adds below which a product runs on the calling thread: waking the pool costs
// more than a few microseconds of sums.
constexpr int64_t kParallelMultiplyAdds = int64_t{1} << 20;

inline int64_t padded_depth(int64_t depth) {
  return (depth + kDepthBlock - 1) / kDepthBlock * kDepthBlock;
}
inline int64_t panel_count(int64_t columns) {
  return (columns + kPanelColumns - 1) / kPanelColumns;
}
inline int64_t panel_bytes(int64_t padded) {
  return padded * kPanelColumns;
}

enum class LeftType { Int8, Int16 };

// How the sums become outputs (see the top of this file). Row arrays are indexed by the
// row, column arrays by the column; the `wide_` column arrays serve when !exact_in_int32.
struct Epilogue {
  const int32_t* row_sums = nullptr;
  const int32_t* row_zeros = nullptr;
  const float* row_scales = nullptr;
  const float* row_bias = nullptr;  // or null
  const int32_t* column_offsets = nullptr;
  const int32_t* column_sums = nullptr;
  const int64_t* wide_column_offsets = nullptr;
  const int64_t* wide_column_sums = nullptr;
  const float* column_scales = nullptr;
  const float* column_bias = nullptr;  // or null
  bool exact_in_int32 = true;
  bool relu = false;
  float* out = nullptr;  // out[i * out_stride + j]
  int64_t out_stride = 0;
};

// The output of one sum, the scalar form of every epilogue: S in int32 or modulo 2^64, then
// the float32 steps.
inline float requantized(const Epilogue& e, int32_t sum, int64_t i, int64_t j) {
  int64_t centered;
  if (e.exact_in_int32) {
    const uint32_t value = static_cast<uint32_t>(sum) -
                           static_cast<uint32_t>(e.row_sums[i]) * static_cast<uint32_t>(e.column_offsets[j]) -
                           static_cast<uint32_t>(e.row_zeros[i]) * static_cast<uint32_t>(e.column_sums[j]);
    centered = static_cast<int32_t>(value);
  } else {
    const uint64_t value =
        static_cast<uint64_t>(int64_t{sum}) -
        static_cast<uint64_t>(int64_t{e.row_sums[i]}) * static_cast<uint64_t>(e.wide_column_offsets[j]) -
        static_cast<uint64_t>(int64_t{e.row_zeros[i]}) * static_cast<uint64_t>(e.wide_column_sums[j]);
    centered = static_cast<int64_t>(value);
  }
  float v = static_cast<float>(centered) * (e.row_scales[i] * e.column_scales[j]);
  if (e.row_bias) v += e.row_bias[i];
  if (e.column_bias) v += e.column_bias[j];
  if (e.relu) v = v > 0.0f ? v : 0.0f;
  return v;
}

// The sums of a tile: tile[i * kMaxTileColumns + j] = D[i][j] for i < rows, j < 16 · panels,
// from the left rows at `left` (stride in elements) and the panels at `right`, `groups`
// groups of four depths long.
using TileFunction = void (*)(int rows, int panels, const void* left, int64_t left_stride, const uint8_t* right,
                              int64_t panel_bytes, int64_t groups, int32_t* tile);

// out for rows [row, row + rows) and columns [column, column + columns) from their tile.
using RequantizeFunction = void (*)(const Epilogue& epilogue, const int32_t* tile, int64_t row, int64_t rows,
                                    int64_t column, int64_t columns);

// Whether every value is finite; low = min(0, min x), high = max(0, max x).
using RangeFunction = bool (*)(const float* x, int64_t count, float& low, float& high);

// q = quantize_value(x, scale, zero, int8) for each value, stored as the left operand's
// type; returns Σ q.
using QuantizeLeftFunction = int32_t (*)(const float* x, int64_t count, float scale, int32_t zero, void* out);

// q as above stored as the byte q + bias (bias 0 or 128, the panels' encoding).
using QuantizeBytesFunction = void (*)(const float* x, int64_t count, float scale, int32_t zero, uint8_t bias,
                                       uint8_t* out);

// One instruction set's kernels.
struct Int8Gemm {
  IntegerIsa isa;
  LeftType left_type;
  uint8_t panel_bias;
  int tile_rows;
  int tile_panels;
  TileFunction tile;
  RequantizeFunction requantize;
  RangeFunction range;
  QuantizeLeftFunction quantize_left;
  QuantizeBytesFunction quantize_bytes;
};

// The kernels of this process's integer level (isa.hpp).
const Int8Gemm& int8_gemm();

int64_t left_element_size(const Int8Gemm& gemm);

// A product: the left rows, the packed right panels, and the epilogue.
struct Product {
  const void* left;
  int64_t left_stride;  // elements
  int64_t rows;
  const uint8_t* right;
  int64_t columns;
  int64_t depth;  // padded_depth of the real depth
  Epilogue epilogue;
};

// Rows [row_begin, row_end) × panels [panel_begin, panel_end) of `product`, on this thread:
// tiles of the micro-kernel's size, each summed and then requantized.
void multiply(const Int8Gemm& gemm, const Product& product, int64_t row_begin, int64_t row_end, int64_t panel_begin,
              int64_t panel_end);

// All of `product` on the thread pool, split by column tiles and row tiles (each output is
// computed by one thread).
void multiply_parallel(const Int8Gemm& gemm, const Product& product);

// Packs rows [0, count) of a row-major int8 matrix [count, depth] (a linear weight, one row
// per output column) as the right operand's panels; sums[j] = Σ_k source[j][k].
void pack_right(const int8_t* source, int64_t count, int64_t depth, uint8_t bias, uint8_t* panels, int64_t* sums);

// Interleaves a row-major block of bytes rows[k][j] (k < padded depth, j < 64, row stride 64)
// into 4 panels of the right operand.
void interleave_block(const uint8_t* rows, int64_t depth, uint8_t* panels, int64_t panel_bytes);

// The left operand from a row-major int8 matrix [count, depth]: rows padded to
// padded_depth(depth), of the left type; sums[i] = Σ_k source[i][k].
void pack_left(const Int8Gemm& gemm, const int8_t* source, int64_t count, int64_t depth, void* left, int32_t* sums);

// The portable kernels' loops, also inlined where the AVX2 and AVX-512 kernels finish their
// last elements (and do what they do not vectorize): a call from AVX code into baseline (SSE)
// code costs more than a short row on some processors (the switch between the two register
// states), and rows of 7 to 56 values (a convolution's planes) are common.
#define EDGERT_BASELINE_TAIL inline __attribute__((always_inline))

// fmin and fmax written out (they are calls into the C library): the smaller or the larger
// of a and b, the other one when one is NaN. Only the sign of a zero result can differ from
// fmin / fmax, which the qparams of a range do not depend on.
EDGERT_BASELINE_TAIL float lower(float a, float b) {
  return b < a || a != a ? b : a;
}
EDGERT_BASELINE_TAIL float higher(float a, float b) {
  return b > a || a != a ? b : a;
}

EDGERT_BASELINE_TAIL bool range_tail(const float* x, int64_t count, float& low, float& high) {
  bool finite = true;
  low = 0.0f, high = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    finite = finite && std::isfinite(x[i]);
    low = lower(low, x[i]);
    high = higher(high, x[i]);
  }
  return finite;
}

// quantize_value of count values into target (int8 or int16); returns Σ q.
template <class Target>
EDGERT_BASELINE_TAIL int32_t quantize_left_tail(const float* x, int64_t count, float scale, int32_t zero,
                                                Target* target) {
  int32_t sum = 0;
  for (int64_t i = 0; i < count; ++i) {
    const int32_t q = quantize_value(x[i], scale, zero, QuantRange{-128, 127});
    target[i] = static_cast<Target>(q);
    sum += q;
  }
  return sum;
}

EDGERT_BASELINE_TAIL void quantize_bytes_tail(const float* x, int64_t count, float scale, int32_t zero, uint8_t bias,
                                              uint8_t* out) {
  for (int64_t i = 0; i < count; ++i) {
    out[i] =
        static_cast<uint8_t>(static_cast<uint8_t>(quantize_value(x[i], scale, zero, QuantRange{-128, 127})) ^ bias);
  }
}

EDGERT_BASELINE_TAIL void requantize_tail(const Epilogue& epilogue, const int32_t* tile, int64_t row, int64_t rows,
                                          int64_t column, int64_t columns) {
  for (int64_t i = 0; i < rows; ++i) {
    float* out = epilogue.out + (row + i) * epilogue.out_stride;
    for (int64_t j = 0; j < columns; ++j) {
      out[column + j] = requantized(epilogue, tile[i * kMaxTileColumns + j], row + i, column + j);
    }
  }
}

// The portable kernels (also the parts other levels share).
Int8Gemm portable_gemm();
void requantize_portable(const Epilogue& epilogue, const int32_t* tile, int64_t row, int64_t rows, int64_t column,
                         int64_t columns);
bool range_portable(const float* x, int64_t count, float& low, float& high);
int32_t quantize_left_int8_portable(const float* x, int64_t count, float scale, int32_t zero, void* out);
int32_t quantize_left_int16_portable(const float* x, int64_t count, float scale, int32_t zero, void* out);
void quantize_bytes_portable(const float* x, int64_t count, float scale, int32_t zero, uint8_t bias, uint8_t* out);

#if defined(__x86_64__)
Int8Gemm avx2_gemm();
Int8Gemm avx512_gemm();
Int8Gemm avx512_vnni_gemm();
#endif
#if defined(__aarch64__)
Int8Gemm dotprod_gemm();
#endif

}  // namespace edgert_quantized
