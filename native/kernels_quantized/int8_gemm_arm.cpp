// The aarch64 kernels of the int8 GEMM (int8_gemm.hpp) for processors with the dot-product
// extension (chosen at run time, isa.cpp): sdot multiplies four signed bytes of a panel
// column by four signed bytes of a left row (one 32-bit lane of a 16-byte register picked by
// index) and adds the four products to an int32 lane, exactly. Panels hold the signed values
// themselves (bias 0). Tiles of 4 rows × 16 columns: 16 accumulators, 4 panel registers and
// 4 left registers of the 32. The epilogue and the activation quantization are NEON forms of
// the scalar code's float32 operations.
#include "int8_gemm.hpp"

#if defined(__aarch64__)

#include <arm_neon.h>

#include <cfloat>
#include <cmath>

#include "quantized.hpp"

// GCC's arm_neon.h declares sdot for armv8.2-a+dotprod: a function inlining it must be
// compiled for that architecture (every processor with the extension implements it).
#if defined(__clang__)
#define EDGERT_TARGET_DOTPROD __attribute__((target("dotprod")))
#else
#define EDGERT_TARGET_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

namespace edgert_quantized {
namespace {

constexpr int64_t kGroupBytes = kPanelColumns * kGroupDepth;

// One group of depths: lane `Lane` of each left register against the group's 4 panel registers.
template <int Lane, int Rows>
EDGERT_TARGET_DOTPROD inline __attribute__((always_inline)) void dot_group(int32x4_t (&sums)[Rows][4],
                                                                           const int8x16_t (&x)[Rows],
                                                                           const int8_t* group) {
  int8x16_t columns[4];
#pragma GCC unroll 4
  for (int s = 0; s < 4; ++s) columns[s] = vld1q_s8(group + 16 * s);
#pragma GCC unroll 4
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) sums[i][s] = vdotq_laneq_s32(sums[i][s], columns[s], x[i], Lane);
  }
}

template <int Rows>
EDGERT_TARGET_DOTPROD void tile_dotprod_fixed(const int8_t* left, int64_t stride, const int8_t* right, int64_t groups,
                                              int32_t* tile) {
  int32x4_t sums[Rows][4];
#pragma GCC unroll 4
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) sums[i][s] = vdupq_n_s32(0);
  }
  // groups is a multiple of 4: the left rows are padded to 16 depths.
  for (int64_t g = 0; g < groups; g += 4) {
    int8x16_t x[Rows];
#pragma GCC unroll 4
    for (int i = 0; i < Rows; ++i) x[i] = vld1q_s8(left + i * stride + g * kGroupDepth);
    const int8_t* group = right + g * kGroupBytes;
    dot_group<0, Rows>(sums, x, group);
    dot_group<1, Rows>(sums, x, group + kGroupBytes);
    dot_group<2, Rows>(sums, x, group + 2 * kGroupBytes);
    dot_group<3, Rows>(sums, x, group + 3 * kGroupBytes);
  }
#pragma GCC unroll 4
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) vst1q_s32(tile + i * kMaxTileColumns + 4 * s, sums[i][s]);
  }
}

void tile_dotprod(int rows, int, const void* left, int64_t stride, const uint8_t* right, int64_t, int64_t groups,
                  int32_t* tile) {
  const int8_t* values = static_cast<const int8_t*>(left);
  const int8_t* panel = reinterpret_cast<const int8_t*>(right);
  switch (rows) {
    case 1: return tile_dotprod_fixed<1>(values, stride, panel, groups, tile);
    case 2: return tile_dotprod_fixed<2>(values, stride, panel, groups, tile);
    case 3: return tile_dotprod_fixed<3>(values, stride, panel, groups, tile);
    default: return tile_dotprod_fixed<4>(values, stride, panel, groups, tile);
  }
}

// The exact int32 epilogue on 4 lanes; relu keeps v where v > 0 (a NaN too gives +0).
void requantize_neon(const Epilogue& e, const int32_t* tile, int64_t row, int64_t rows, int64_t column,
                     int64_t columns) {
  if (!e.exact_in_int32) return requantize_portable(e, tile, row, rows, column, columns);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t r = row + i;
    const int32x4_t row_sum = vdupq_n_s32(e.row_sums[r]), row_zero = vdupq_n_s32(e.row_zeros[r]);
    const float32x4_t row_scale = vdupq_n_f32(e.row_scales[r]);
    const float32x4_t row_bias = vdupq_n_f32(e.row_bias ? e.row_bias[r] : 0.0f);
    float* out = e.out + r * e.out_stride + column;
    const int32_t* sums_row = tile + i * kMaxTileColumns;
    int64_t j = 0;
    for (; j + 4 <= columns; j += 4) {
      int32x4_t centered = vmlsq_s32(vld1q_s32(sums_row + j), row_sum, vld1q_s32(e.column_offsets + column + j));
      centered = vmlsq_s32(centered, row_zero, vld1q_s32(e.column_sums + column + j));
      const float32x4_t factor = vmulq_f32(row_scale, vld1q_f32(e.column_scales + column + j));
      float32x4_t v = vmulq_f32(vcvtq_f32_s32(centered), factor);
      if (e.row_bias) v = vaddq_f32(v, row_bias);
      if (e.column_bias) v = vaddq_f32(v, vld1q_f32(e.column_bias + column + j));
      if (e.relu) {
        v = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(v), vcgtq_f32(v, vdupq_n_f32(0.0f))));
      }
      vst1q_f32(out + j, v);
    }
    for (; j < columns; ++j) out[j] = requantized(e, sums_row[j], r, column + j);
  }
}

// quantize_value on 4 lanes: x / scale, rounded in the current mode (to nearest even), NaN
// to 0, + zero, clamped to [-128, 127] (no NaN is left, so fmax / fmin are max / min).
int32x4_t quantize_lanes(float32x4_t x, float32x4_t scale, float32x4_t zero) {
  float32x4_t rounded = vrndiq_f32(vdivq_f32(x, scale));
  rounded = vreinterpretq_f32_u32(vandq_u32(vreinterpretq_u32_f32(rounded), vceqq_f32(rounded, rounded)));
  rounded = vminq_f32(vmaxq_f32(vaddq_f32(rounded, zero), vdupq_n_f32(-128.0f)), vdupq_n_f32(127.0f));
  return vcvtq_s32_f32(rounded);
}

bool range_neon(const float* x, int64_t count, float& low, float& high) {
  float32x4_t lows = vdupq_n_f32(0.0f), highs = vdupq_n_f32(0.0f);
  uint32x4_t finite = vdupq_n_u32(0xffffffffu);
  const float32x4_t largest = vdupq_n_f32(FLT_MAX);
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const float32x4_t v = vld1q_f32(x + i);
    lows = vminq_f32(lows, v);
    highs = vmaxq_f32(highs, v);
    finite = vandq_u32(finite, vcleq_f32(vabsq_f32(v), largest));  // false for inf and NaN
  }
  float tail_low, tail_high;
  const bool tail_finite = range_portable(x + i, count - i, tail_low, tail_high);
  low = std::fmin(vminvq_f32(lows), tail_low);
  high = std::fmax(vmaxvq_f32(highs), tail_high);
  return vminvq_u32(finite) != 0 && tail_finite;
}

int32_t quantize_left_neon(const float* x, int64_t count, float scale, int32_t zero, void* out) {
  int8_t* target = static_cast<int8_t*>(out);
  const float32x4_t scales = vdupq_n_f32(scale), zeros = vdupq_n_f32(static_cast<float>(zero));
  int32x4_t sums = vdupq_n_s32(0);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const int32x4_t low = quantize_lanes(vld1q_f32(x + i), scales, zeros);
    const int32x4_t high = quantize_lanes(vld1q_f32(x + i + 4), scales, zeros);
    sums = vaddq_s32(sums, vaddq_s32(low, high));
    vst1_s8(target + i, vmovn_s16(vcombine_s16(vmovn_s32(low), vmovn_s32(high))));
  }
  return vaddvq_s32(sums) + quantize_left_int8_portable(x + i, count - i, scale, zero, target + i);
}

void quantize_bytes_neon(const float* x, int64_t count, float scale, int32_t zero, uint8_t bias, uint8_t* out) {
  const float32x4_t scales = vdupq_n_f32(scale), zeros = vdupq_n_f32(static_cast<float>(zero));
  const uint8x8_t flip = vdup_n_u8(bias);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const int32x4_t low = quantize_lanes(vld1q_f32(x + i), scales, zeros);
    const int32x4_t high = quantize_lanes(vld1q_f32(x + i + 4), scales, zeros);
    const int8x8_t q = vmovn_s16(vcombine_s16(vmovn_s32(low), vmovn_s32(high)));
    vst1_u8(out + i, veor_u8(vreinterpret_u8_s8(q), flip));
  }
  quantize_bytes_portable(x + i, count - i, scale, zero, bias, out + i);
}

}  // namespace

Int8Gemm dotprod_gemm() {
  return Int8Gemm{IntegerIsa::Dotprod, LeftType::Int8,     0, 4, 1, tile_dotprod, requantize_neon, range_neon,
                  quantize_left_neon,  quantize_bytes_neon};
}

}  // namespace edgert_quantized

#endif  // __aarch64__
