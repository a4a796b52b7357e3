// The int8 GEMM's driver, packing and portable kernels (int8_gemm.hpp), and the choice of
// the kernels for this process's integer level.
#include "int8_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "edgert/threadpool.h"
#include "quantized.hpp"

#if defined(__x86_64__)
#include <emmintrin.h>  // SSE2: the x86-64 baseline
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace edgert_quantized {
namespace {

constexpr QuantRange kInt8{-128, 127};

// D for one tile, one element at a time: the left values times the panel bytes read back
// as value + bias (unsigned for bias 128, signed for bias 0).
template <class Left>
void tile_portable_typed(int rows, int panels, const Left* left, int64_t left_stride, const uint8_t* right,
                         int64_t panel_bytes, int64_t groups, uint8_t bias, int32_t* tile) {
  for (int i = 0; i < rows; ++i) {
    const Left* row = left + i * left_stride;
    for (int q = 0; q < panels; ++q) {
      const uint8_t* panel = right + q * panel_bytes;
      int32_t sums[kPanelColumns] = {};
      for (int64_t g = 0; g < groups; ++g) {
        const uint8_t* group = panel + g * kPanelColumns * kGroupDepth;
        for (int64_t c = 0; c < kPanelColumns; ++c) {
          for (int64_t t = 0; t < kGroupDepth; ++t) {
            const uint8_t byte = group[c * kGroupDepth + t];
            const int32_t value = bias ? int32_t{byte} : int32_t{static_cast<int8_t>(byte)};
            sums[c] += int32_t{row[g * kGroupDepth + t]} * value;
          }
        }
      }
      std::memcpy(tile + i * kMaxTileColumns + q * kPanelColumns, sums, sizeof(sums));
    }
  }
}

void tile_portable(int rows, int panels, const void* left, int64_t left_stride, const uint8_t* right,
                   int64_t panel_bytes, int64_t groups, int32_t* tile) {
  tile_portable_typed(rows, panels, static_cast<const int8_t*>(left), left_stride, right, panel_bytes, groups, 0x80,
                      tile);
}

Int8Gemm select_gemm() {
  switch (edgert::kernels::integer_kernel_isa()) {
#if defined(__x86_64__)
    case IntegerIsa::Avx512Vnni: return avx512_vnni_gemm();
    case IntegerIsa::Avx512: return avx512_gemm();
    case IntegerIsa::Avx2: return avx2_gemm();
#endif
#if defined(__aarch64__)
    case IntegerIsa::Dotprod: return dotprod_gemm();
#endif
    default: break;
  }
  return portable_gemm();
}

// Rows [row, row + rows) of the left operand.
const void* left_rows(const Int8Gemm& gemm, const Product& product, int64_t row) {
  return static_cast<const char*>(product.left) + row * product.left_stride * left_element_size(gemm);
}

}  // namespace

// ------------------------------------------------------------------- portable kernels

void requantize_portable(const Epilogue& epilogue, const int32_t* tile, int64_t row, int64_t rows, int64_t column,
                         int64_t columns) {
  requantize_tail(epilogue, tile, row, rows, column, columns);
}

bool range_portable(const float* x, int64_t count, float& low, float& high) {
  return range_tail(x, count, low, high);
}

int32_t quantize_left_int8_portable(const float* x, int64_t count, float scale, int32_t zero, void* out) {
  return quantize_left_tail(x, count, scale, zero, static_cast<int8_t*>(out));
}

int32_t quantize_left_int16_portable(const float* x, int64_t count, float scale, int32_t zero, void* out) {
  return quantize_left_tail(x, count, scale, zero, static_cast<int16_t*>(out));
}

void quantize_bytes_portable(const float* x, int64_t count, float scale, int32_t zero, uint8_t bias, uint8_t* out) {
  quantize_bytes_tail(x, count, scale, zero, bias, out);
}

Int8Gemm portable_gemm() {
  return Int8Gemm{IntegerIsa::Portable,
                  LeftType::Int8,
                  0x80,
                  4,
                  1,
                  tile_portable,
                  requantize_portable,
                  range_portable,
                  quantize_left_int8_portable,
                  quantize_bytes_portable};
}

const Int8Gemm& int8_gemm() {
  static const Int8Gemm chosen = select_gemm();
  return chosen;
}

int64_t left_element_size(const Int8Gemm& gemm) {
  return gemm.left_type == LeftType::Int16 ? 2 : 1;
}

// ------------------------------------------------------------------- packing

void pack_right(const int8_t* source, int64_t count, int64_t depth, uint8_t bias, uint8_t* panels, int64_t* sums) {
  const int64_t padded = padded_depth(depth);
  const int64_t bytes = panel_bytes(padded);
  const size_t size = static_cast<size_t>(panel_count(count) * bytes);
  if (size == 0) {  // no columns or no depth (panels may be null): every sum is 0
    std::fill_n(sums, count, int64_t{0});
    return;
  }
  std::memset(panels, 0, size);
  for (int64_t j = 0; j < count; ++j) {
    const int8_t* row = source + j * depth;
    uint8_t* column = panels + j / kPanelColumns * bytes + j % kPanelColumns * kGroupDepth;
    int64_t sum = 0;
    for (int64_t k = 0; k < depth; ++k) {
      column[k / kGroupDepth * kPanelColumns * kGroupDepth + k % kGroupDepth] = static_cast<uint8_t>(row[k]) ^ bias;
      sum += row[k];
    }
    sums[j] = sum;
  }
}

void interleave_block(const uint8_t* rows, int64_t depth, uint8_t* panels, int64_t panel_bytes) {
  constexpr int64_t kWidth = kMaxTileColumns;
  for (int64_t g = 0; g < depth / kGroupDepth; ++g) {
    const uint8_t* group = rows + g * kGroupDepth * kWidth;
    for (int64_t q = 0; q < kMaxTilePanels; ++q) {
      uint8_t* target = panels + q * panel_bytes + g * kPanelColumns * kGroupDepth;
      const uint8_t* source = group + q * kPanelColumns;
#if defined(__x86_64__)
      // Four rows of 16 bytes into 16 groups of four: two rounds of unpacking.
      const __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(source));
      const __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + kWidth));
      const __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + 2 * kWidth));
      const __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + 3 * kWidth));
      const __m128i low01 = _mm_unpacklo_epi8(r0, r1), high01 = _mm_unpackhi_epi8(r0, r1);
      const __m128i low23 = _mm_unpacklo_epi8(r2, r3), high23 = _mm_unpackhi_epi8(r2, r3);
      __m128i* out = reinterpret_cast<__m128i*>(target);
      _mm_storeu_si128(out, _mm_unpacklo_epi16(low01, low23));
      _mm_storeu_si128(out + 1, _mm_unpackhi_epi16(low01, low23));
      _mm_storeu_si128(out + 2, _mm_unpacklo_epi16(high01, high23));
      _mm_storeu_si128(out + 3, _mm_unpackhi_epi16(high01, high23));
#elif defined(__aarch64__)
      uint8x16x4_t lanes;
      lanes.val[0] = vld1q_u8(source);
      lanes.val[1] = vld1q_u8(source + kWidth);
      lanes.val[2] = vld1q_u8(source + 2 * kWidth);
      lanes.val[3] = vld1q_u8(source + 3 * kWidth);
      vst4q_u8(target, lanes);  // stores the four rows interleaved byte by byte
#else
      for (int64_t c = 0; c < kPanelColumns; ++c) {
        for (int64_t t = 0; t < kGroupDepth; ++t) target[c * kGroupDepth + t] = source[t * kWidth + c];
      }
#endif
    }
  }
}

void pack_left(const Int8Gemm& gemm, const int8_t* source, int64_t count, int64_t depth, void* left, int32_t* sums) {
  const int64_t padded = padded_depth(depth);
  for (int64_t i = 0; i < count; ++i) {
    const int8_t* row = source + i * depth;
    int32_t sum = 0;
    for (int64_t k = 0; k < depth; ++k) sum += row[k];
    sums[i] = sum;
    if (gemm.left_type == LeftType::Int16) {
      int16_t* target = static_cast<int16_t*>(left) + i * padded;
      std::fill(target, target + padded, int16_t{0});
      std::copy(row, row + depth, target);
    } else {
      int8_t* target = static_cast<int8_t*>(left) + i * padded;
      std::fill(target, target + padded, int8_t{0});
      std::copy(row, row + depth, target);
    }
  }
}

// ------------------------------------------------------------------- driver

void multiply(const Int8Gemm& gemm, const Product& product, int64_t row_begin, int64_t row_end, int64_t panel_begin,
              int64_t panel_end) {
  alignas(64) int32_t tile[kMaxTileRows * kMaxTileColumns];
  const int64_t bytes = panel_bytes(product.depth);
  const int64_t groups = product.depth / kGroupDepth;
  for (int64_t panel = panel_begin; panel < panel_end; panel += gemm.tile_panels) {
    const int panels = static_cast<int>(std::min<int64_t>(gemm.tile_panels, panel_end - panel));
    const int64_t column = panel * kPanelColumns;
    const int64_t columns = std::min<int64_t>(panels * kPanelColumns, product.columns - column);
    for (int64_t row = row_begin; row < row_end; row += gemm.tile_rows) {
      const int rows = static_cast<int>(std::min<int64_t>(gemm.tile_rows, row_end - row));
      gemm.tile(rows, panels, left_rows(gemm, product, row), product.left_stride, product.right + panel * bytes, bytes,
                groups, tile);
      gemm.requantize(product.epilogue, tile, row, rows, column, columns);
    }
  }
}

void multiply_parallel(const Int8Gemm& gemm, const Product& product) {
  if (product.rows <= 0 || product.columns <= 0) return;
  const int64_t panels = panel_count(product.columns);
  const int64_t column_tiles = (panels + gemm.tile_panels - 1) / gemm.tile_panels;
  const int64_t row_tiles = (product.rows + gemm.tile_rows - 1) / gemm.tile_rows;
  const int64_t tile_work = std::max<int64_t>(1, std::min<int64_t>(product.rows, gemm.tile_rows) * gemm.tile_panels *
                                                     kPanelColumns * std::max<int64_t>(product.depth, 1));
  // Consecutive work items share a column tile, so a thread's panels stay in its caches
  // while the left rows stream past.
  edgert::parallel_for(0, column_tiles * row_tiles, std::max<int64_t>(1, kParallelMultiplyAdds / tile_work),
                       [&](int64_t begin, int64_t end) {
                         for (int64_t item = begin; item < end; ++item) {
                           const int64_t panel = item / row_tiles * gemm.tile_panels,
                                         row = item % row_tiles * gemm.tile_rows;
                           multiply(gemm, product, row, std::min(product.rows, row + gemm.tile_rows), panel,
                                    std::min(panels, panel + gemm.tile_panels));
                         }
                       });
}

}  // namespace edgert_quantized
