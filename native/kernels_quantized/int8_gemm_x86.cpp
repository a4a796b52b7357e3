// The x86-64 kernels of the int8 GEMM (int8_gemm.hpp), each compiled for its instruction set
// alone (target attributes) and chosen at run time:
//   - AVX-512 VNNI: vpdpbusd multiplies the panels' unsigned bytes (value + 128) by four
//     broadcast signed bytes of a left row and adds the four products to each int32 lane;
//     tiles of 6 rows × 64 columns (24 accumulators).
//   - AVX-512 (BW) and AVX2: vpmaddwd on int16, the panel bytes zero-extended and the left
//     rows stored as int16: each int32 lane gets two products (at most 2 · 255 · 128, exact;
//     vpmaddubsw's saturating int16 pair sums are never used). Tiles of 6 × 32 and 3 × 16.
// The epilogues and the activation quantization are the scalar code's float32 operations,
// lane by lane (docs/kernels.md).
#include "int8_gemm.hpp"

#if defined(__x86_64__)

#include <immintrin.h>

#include <cfloat>
#include <cmath>
#include <cstring>

#include "quantized.hpp"

namespace edgert_quantized {
namespace {

#define EDGERT_TARGET_AVX2 __attribute__((target("avx2")))
#define EDGERT_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define EDGERT_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))

constexpr int64_t kGroupBytes = kPanelColumns * kGroupDepth;  // one group of one panel

// Four consecutive int8 values (one group of a left row) as one int32.
inline int32_t load_group(const int8_t* values) {
  int32_t group;
  std::memcpy(&group, values, sizeof(group));
  return group;
}

// Four consecutive int16 values as one int64.
inline int64_t load_group(const int16_t* values) {
  int64_t group;
  std::memcpy(&group, values, sizeof(group));
  return group;
}

// The lanes of a vector of 16 that the first `count` values fill.
inline __mmask16 first_lanes(int64_t count) {
  return count >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << count) - 1);
}

// ------------------------------------------------------------------- AVX-512 VNNI

template <int Rows, int Panels>
EDGERT_TARGET_VNNI void tile_vnni_fixed(const int8_t* left, int64_t stride, const uint8_t* right, int64_t bytes,
                                        int64_t groups, int32_t* tile) {
  __m512i sums[Rows][Panels];
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int q = 0; q < Panels; ++q) sums[i][q] = _mm512_setzero_si512();
  }
  for (int64_t g = 0; g < groups; ++g) {
    __m512i columns[Panels];
#pragma GCC unroll 4
    for (int q = 0; q < Panels; ++q) columns[q] = _mm512_loadu_si512(right + q * bytes + g * kGroupBytes);
#pragma GCC unroll 8
    for (int i = 0; i < Rows; ++i) {
      const __m512i x = _mm512_set1_epi32(load_group(left + i * stride + g * kGroupDepth));
#pragma GCC unroll 4
      for (int q = 0; q < Panels; ++q) sums[i][q] = _mm512_dpbusd_epi32(sums[i][q], columns[q], x);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int q = 0; q < Panels; ++q) _mm512_storeu_si512(tile + i * kMaxTileColumns + q * kPanelColumns, sums[i][q]);
  }
}

template <int Rows>
void tile_vnni_rows(int panels, const int8_t* left, int64_t stride, const uint8_t* right, int64_t bytes, int64_t groups,
                    int32_t* tile) {
  switch (panels) {
    case 1: return tile_vnni_fixed<Rows, 1>(left, stride, right, bytes, groups, tile);
    case 2: return tile_vnni_fixed<Rows, 2>(left, stride, right, bytes, groups, tile);
    case 3: return tile_vnni_fixed<Rows, 3>(left, stride, right, bytes, groups, tile);
    default: return tile_vnni_fixed<Rows, 4>(left, stride, right, bytes, groups, tile);
  }
}

void tile_vnni(int rows, int panels, const void* left, int64_t stride, const uint8_t* right, int64_t bytes,
               int64_t groups, int32_t* tile) {
  const int8_t* values = static_cast<const int8_t*>(left);
  switch (rows) {
    case 1: return tile_vnni_rows<1>(panels, values, stride, right, bytes, groups, tile);
    case 2: return tile_vnni_rows<2>(panels, values, stride, right, bytes, groups, tile);
    case 3: return tile_vnni_rows<3>(panels, values, stride, right, bytes, groups, tile);
    case 4: return tile_vnni_rows<4>(panels, values, stride, right, bytes, groups, tile);
    case 5: return tile_vnni_rows<5>(panels, values, stride, right, bytes, groups, tile);
    default: return tile_vnni_rows<6>(panels, values, stride, right, bytes, groups, tile);
  }
}

// ------------------------------------------------------------------- AVX-512 int16

// Lane pairs (2c, 2c + 1) of `low` and `high` hold the two partial sums of columns c and
// c + 8: the 16 column sums in order.
EDGERT_TARGET_AVX512 __m512i join_pairs(__m512i low, __m512i high) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  low = _mm512_add_epi32(low, _mm512_srli_epi64(low, 32));
  high = _mm512_add_epi32(high, _mm512_srli_epi64(high, 32));
  return _mm512_permutex2var_epi32(low, even, high);
}

template <int Rows, int Panels>
EDGERT_TARGET_AVX512 void tile_avx512_fixed(const int16_t* left, int64_t stride, const uint8_t* right, int64_t bytes,
                                            int64_t groups, int32_t* tile) {
  constexpr int kHalves = 2 * Panels;  // 8 columns each
  __m512i sums[Rows][kHalves];
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int h = 0; h < kHalves; ++h) sums[i][h] = _mm512_setzero_si512();
  }
  for (int64_t g = 0; g < groups; ++g) {
    __m512i columns[kHalves];
#pragma GCC unroll 4
    for (int h = 0; h < kHalves; ++h) {
      const uint8_t* source = right + h / 2 * bytes + g * kGroupBytes + h % 2 * (kGroupBytes / 2);
      columns[h] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(source)));
    }
#pragma GCC unroll 8
    for (int i = 0; i < Rows; ++i) {
      const __m512i x = _mm512_set1_epi64(load_group(left + i * stride + g * kGroupDepth));
#pragma GCC unroll 4
      for (int h = 0; h < kHalves; ++h) sums[i][h] = _mm512_add_epi32(sums[i][h], _mm512_madd_epi16(columns[h], x));
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int q = 0; q < Panels; ++q) {
      _mm512_storeu_si512(tile + i * kMaxTileColumns + q * kPanelColumns,
                          join_pairs(sums[i][2 * q], sums[i][2 * q + 1]));
    }
  }
}

template <int Rows>
void tile_avx512_rows(int panels, const int16_t* left, int64_t stride, const uint8_t* right, int64_t bytes,
                      int64_t groups, int32_t* tile) {
  if (panels == 1) return tile_avx512_fixed<Rows, 1>(left, stride, right, bytes, groups, tile);
  tile_avx512_fixed<Rows, 2>(left, stride, right, bytes, groups, tile);
}

void tile_avx512(int rows, int panels, const void* left, int64_t stride, const uint8_t* right, int64_t bytes,
                 int64_t groups, int32_t* tile) {
  const int16_t* values = static_cast<const int16_t*>(left);
  switch (rows) {
    case 1: return tile_avx512_rows<1>(panels, values, stride, right, bytes, groups, tile);
    case 2: return tile_avx512_rows<2>(panels, values, stride, right, bytes, groups, tile);
    case 3: return tile_avx512_rows<3>(panels, values, stride, right, bytes, groups, tile);
    case 4: return tile_avx512_rows<4>(panels, values, stride, right, bytes, groups, tile);
    case 5: return tile_avx512_rows<5>(panels, values, stride, right, bytes, groups, tile);
    default: return tile_avx512_rows<6>(panels, values, stride, right, bytes, groups, tile);
  }
}

// ------------------------------------------------------------------- AVX2 int16

template <int Rows>
EDGERT_TARGET_AVX2 void tile_avx2_fixed(const int16_t* left, int64_t stride, const uint8_t* right, int64_t groups,
                                        int32_t* tile) {
  __m256i sums[Rows][4];  // 4 columns each, lane pairs (2c, 2c + 1) partial sums of column c
#pragma GCC unroll 4
  for (int i = 0; i < Rows; ++i) {
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) sums[i][s] = _mm256_setzero_si256();
  }
  for (int64_t g = 0; g < groups; ++g) {
    __m256i x[Rows];
#pragma GCC unroll 4
    for (int i = 0; i < Rows; ++i) x[i] = _mm256_set1_epi64x(load_group(left + i * stride + g * kGroupDepth));
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(right + g * kGroupBytes + 16 * s));
      const __m256i columns = _mm256_cvtepu8_epi16(bytes);
#pragma GCC unroll 4
      for (int i = 0; i < Rows; ++i) sums[i][s] = _mm256_add_epi32(sums[i][s], _mm256_madd_epi16(columns, x[i]));
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < Rows; ++i) {
    // hadd gives columns (0 1 4 5 | 2 3 6 7); the permutation puts them in order.
    const __m256i low = _mm256_permute4x64_epi64(_mm256_hadd_epi32(sums[i][0], sums[i][1]), 0xd8);
    const __m256i high = _mm256_permute4x64_epi64(_mm256_hadd_epi32(sums[i][2], sums[i][3]), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(tile + i * kMaxTileColumns), low);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(tile + i * kMaxTileColumns + 8), high);
  }
}

void tile_avx2(int rows, int, const void* left, int64_t stride, const uint8_t* right, int64_t, int64_t groups,
               int32_t* tile) {
  const int16_t* values = static_cast<const int16_t*>(left);
  switch (rows) {
    case 1: return tile_avx2_fixed<1>(values, stride, right, groups, tile);
    case 2: return tile_avx2_fixed<2>(values, stride, right, groups, tile);
    default: return tile_avx2_fixed<3>(values, stride, right, groups, tile);
  }
}

// ------------------------------------------------------------------- epilogues

EDGERT_TARGET_AVX512 void requantize_avx512(const Epilogue& e, const int32_t* tile, int64_t row, int64_t rows,
                                            int64_t column, int64_t columns) {
  if (!e.exact_in_int32) return requantize_tail(e, tile, row, rows, column, columns);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t r = row + i;
    const __m512i row_sum = _mm512_set1_epi32(e.row_sums[r]), row_zero = _mm512_set1_epi32(e.row_zeros[r]);
    const __m512 row_scale = _mm512_set1_ps(e.row_scales[r]);
    const __m512 row_bias = _mm512_set1_ps(e.row_bias ? e.row_bias[r] : 0.0f);
    float* out = e.out + r * e.out_stride + column;
    for (int64_t j = 0; j < columns; j += kPanelColumns) {
      const __mmask16 mask = first_lanes(columns - j);
      const __m512i sums = _mm512_maskz_loadu_epi32(mask, tile + i * kMaxTileColumns + j);
      const __m512i offsets = _mm512_maskz_loadu_epi32(mask, e.column_offsets + column + j);
      const __m512i column_sums = _mm512_maskz_loadu_epi32(mask, e.column_sums + column + j);
      const __m512i centered = _mm512_sub_epi32(_mm512_sub_epi32(sums, _mm512_mullo_epi32(row_sum, offsets)),
                                                _mm512_mullo_epi32(row_zero, column_sums));
      const __m512 factor = _mm512_mul_ps(row_scale, _mm512_maskz_loadu_ps(mask, e.column_scales + column + j));
      __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(centered), factor);
      if (e.row_bias) v = _mm512_add_ps(v, row_bias);
      if (e.column_bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, e.column_bias + column + j));
      if (e.relu) v = _mm512_max_ps(v, _mm512_setzero_ps());  // v > 0 ? v : 0, NaN included
      _mm512_mask_storeu_ps(out + j, mask, v);
    }
  }
}

EDGERT_TARGET_AVX2 void requantize_avx2(const Epilogue& e, const int32_t* tile, int64_t row, int64_t rows,
                                        int64_t column, int64_t columns) {
  if (!e.exact_in_int32) return requantize_tail(e, tile, row, rows, column, columns);
  for (int64_t i = 0; i < rows; ++i) {
    const int64_t r = row + i;
    const __m256i row_sum = _mm256_set1_epi32(e.row_sums[r]), row_zero = _mm256_set1_epi32(e.row_zeros[r]);
    const __m256 row_scale = _mm256_set1_ps(e.row_scales[r]);
    const __m256 row_bias = _mm256_set1_ps(e.row_bias ? e.row_bias[r] : 0.0f);
    float* out = e.out + r * e.out_stride + column;
    const int32_t* sums_row = tile + i * kMaxTileColumns;
    int64_t j = 0;
    for (; j + 8 <= columns; j += 8) {
      const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(sums_row + j));
      const __m256i offsets = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.column_offsets + column + j));
      const __m256i column_sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(e.column_sums + column + j));
      const __m256i centered = _mm256_sub_epi32(_mm256_sub_epi32(sums, _mm256_mullo_epi32(row_sum, offsets)),
                                                _mm256_mullo_epi32(row_zero, column_sums));
      const __m256 factor = _mm256_mul_ps(row_scale, _mm256_loadu_ps(e.column_scales + column + j));
      __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(centered), factor);
      if (e.row_bias) v = _mm256_add_ps(v, row_bias);
      if (e.column_bias) v = _mm256_add_ps(v, _mm256_loadu_ps(e.column_bias + column + j));
      if (e.relu) v = _mm256_max_ps(v, _mm256_setzero_ps());
      _mm256_storeu_ps(out + j, v);
    }
    for (; j < columns; ++j) out[j] = requantized(e, sums_row[j], r, column + j);
  }
}

// ------------------------------------------------------------------- activation quantization

// quantize_value on 16 lanes, the same float32 operations: x / scale, rounded to nearest
// even, NaN to 0, + zero, clamped to [-128, 127] (no NaN is left by then, so max and min are
// fmax and fmin).
EDGERT_TARGET_AVX512 __m512i quantize_lanes(__m512 x, __m512 scale, __m512 zero) {
  __m512 rounded = _mm512_roundscale_ps(_mm512_div_ps(x, scale), _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC);
  rounded = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(rounded, rounded, _CMP_UNORD_Q), rounded, _mm512_setzero_ps());
  rounded = _mm512_min_ps(_mm512_max_ps(_mm512_add_ps(rounded, zero), _mm512_set1_ps(-128.0f)), _mm512_set1_ps(127.0f));
  return _mm512_cvtps_epi32(rounded);
}

EDGERT_TARGET_AVX512 bool range_avx512(const float* x, int64_t count, float& low, float& high) {
  __m512 lows = _mm512_setzero_ps(), highs = _mm512_setzero_ps();
  const __m512 largest = _mm512_set1_ps(FLT_MAX);
  __mmask16 non_finite = 0;
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    lows = _mm512_min_ps(lows, v);
    highs = _mm512_max_ps(highs, v);
    non_finite |= _mm512_cmp_ps_mask(_mm512_abs_ps(v), largest, _CMP_NLE_UQ);  // inf or NaN
  }
  float tail_low, tail_high;
  const bool tail_finite = range_tail(x + i, count - i, tail_low, tail_high);
  low = lower(_mm512_reduce_min_ps(lows), tail_low);
  high = higher(_mm512_reduce_max_ps(highs), tail_high);
  return non_finite == 0 && tail_finite;
}

// How quantized values are stored: the left operand's int8 or int16, or the panels' bytes.
enum class Stored { Int8, Int16, Bytes };

// Quantizes `count` values 16 at a time (the last vector masked) into `out`; returns Σ q.
template <Stored Kind>
EDGERT_TARGET_AVX512 int32_t quantize_avx512(const float* x, int64_t count, float scale, int32_t zero, uint8_t bias,
                                             void* out) {
  const __m512 scales = _mm512_set1_ps(scale), zeros = _mm512_set1_ps(static_cast<float>(zero));
  const __m128i flip = _mm_set1_epi8(static_cast<char>(bias));
  __m512i sums = _mm512_setzero_si512();
  for (int64_t i = 0; i < count; i += 16) {
    const __mmask16 lanes = first_lanes(count - i);
    const __m512i q = quantize_lanes(_mm512_maskz_loadu_ps(lanes, x + i), scales, zeros);
    sums = _mm512_mask_add_epi32(sums, lanes, sums, q);
    if constexpr (Kind == Stored::Int16) {
      _mm256_mask_storeu_epi16(static_cast<int16_t*>(out) + i, lanes, _mm512_cvtepi32_epi16(q));
    } else if constexpr (Kind == Stored::Int8) {
      _mm_mask_storeu_epi8(static_cast<int8_t*>(out) + i, lanes, _mm512_cvtepi32_epi8(q));
    } else {
      _mm_mask_storeu_epi8(static_cast<uint8_t*>(out) + i, lanes, _mm_xor_si128(_mm512_cvtepi32_epi8(q), flip));
    }
  }
  return _mm512_reduce_add_epi32(sums);
}

int32_t quantize_left_int8_avx512(const float* x, int64_t count, float scale, int32_t zero, void* out) {
  return quantize_avx512<Stored::Int8>(x, count, scale, zero, 0, out);
}

int32_t quantize_left_int16_avx512(const float* x, int64_t count, float scale, int32_t zero, void* out) {
  return quantize_avx512<Stored::Int16>(x, count, scale, zero, 0, out);
}

void quantize_bytes_avx512(const float* x, int64_t count, float scale, int32_t zero, uint8_t bias, uint8_t* out) {
  quantize_avx512<Stored::Bytes>(x, count, scale, zero, bias, out);
}

// quantize_value on 8 lanes, as quantize_lanes.
EDGERT_TARGET_AVX2 __m256i quantize_lanes(__m256 x, __m256 scale, __m256 zero) {
  __m256 rounded = _mm256_round_ps(_mm256_div_ps(x, scale), _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC);
  rounded = _mm256_andnot_ps(_mm256_cmp_ps(rounded, rounded, _CMP_UNORD_Q), rounded);
  rounded = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(rounded, zero), _mm256_set1_ps(-128.0f)), _mm256_set1_ps(127.0f));
  return _mm256_cvtps_epi32(rounded);
}

EDGERT_TARGET_AVX2 int32_t horizontal_sum(__m256i lanes) {
  __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0x4e));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0xb1));
  return _mm_cvtsi128_si32(sum);
}

EDGERT_TARGET_AVX2 float horizontal_min(__m256 lanes) {
  __m128 m = _mm_min_ps(_mm256_castps256_ps128(lanes), _mm256_extractf128_ps(lanes, 1));
  m = _mm_min_ps(m, _mm_movehl_ps(m, m));
  m = _mm_min_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

EDGERT_TARGET_AVX2 float horizontal_max(__m256 lanes) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(lanes), _mm256_extractf128_ps(lanes, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

EDGERT_TARGET_AVX2 bool range_avx2(const float* x, int64_t count, float& low, float& high) {
  __m256 lows = _mm256_setzero_ps(), highs = _mm256_setzero_ps(), non_finite = _mm256_setzero_ps();
  const __m256 largest = _mm256_set1_ps(FLT_MAX), magnitude = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    lows = _mm256_min_ps(lows, v);
    highs = _mm256_max_ps(highs, v);
    non_finite = _mm256_or_ps(non_finite, _mm256_cmp_ps(_mm256_and_ps(v, magnitude), largest, _CMP_NLE_UQ));
  }
  float tail_low, tail_high;
  const bool tail_finite = range_tail(x + i, count - i, tail_low, tail_high);
  low = lower(horizontal_min(lows), tail_low);
  high = higher(horizontal_max(highs), tail_high);
  return _mm256_movemask_ps(non_finite) == 0 && tail_finite;
}

EDGERT_TARGET_AVX2 int32_t quantize_left_int16_avx2(const float* x, int64_t count, float scale, int32_t zero,
                                                    void* out) {
  int16_t* target = static_cast<int16_t*>(out);
  const __m256 scales = _mm256_set1_ps(scale), zeros = _mm256_set1_ps(static_cast<float>(zero));
  __m256i sums = _mm256_setzero_si256();
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i q = quantize_lanes(_mm256_loadu_ps(x + i), scales, zeros);
    sums = _mm256_add_epi32(sums, q);
    const __m128i packed = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(target + i), packed);
  }
  return horizontal_sum(sums) + quantize_left_tail(x + i, count - i, scale, zero, target + i);
}

EDGERT_TARGET_AVX2 void quantize_bytes_avx2(const float* x, int64_t count, float scale, int32_t zero, uint8_t bias,
                                            uint8_t* out) {
  const __m256 scales = _mm256_set1_ps(scale), zeros = _mm256_set1_ps(static_cast<float>(zero));
  const __m128i flip = _mm_set1_epi8(static_cast<char>(bias));
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256i q = quantize_lanes(_mm256_loadu_ps(x + i), scales, zeros);
    const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i), _mm_xor_si128(_mm_packs_epi16(words, words), flip));
  }
  quantize_bytes_tail(x + i, count - i, scale, zero, bias, out + i);
}

}  // namespace

Int8Gemm avx512_vnni_gemm() {
  return Int8Gemm{
      IntegerIsa::Avx512Vnni,    LeftType::Int8,       0x80, 6, 4, tile_vnni, requantize_avx512, range_avx512,
      quantize_left_int8_avx512, quantize_bytes_avx512};
}

Int8Gemm avx512_gemm() {
  return Int8Gemm{
      IntegerIsa::Avx512,         LeftType::Int16,      0x80, 6, 2, tile_avx512, requantize_avx512, range_avx512,
      quantize_left_int16_avx512, quantize_bytes_avx512};
}

Int8Gemm avx2_gemm() {
  return Int8Gemm{IntegerIsa::Avx2,         LeftType::Int16,    0x80, 3, 1, tile_avx2, requantize_avx2, range_avx2,
                  quantize_left_int16_avx2, quantize_bytes_avx2};
}

}  // namespace edgert_quantized

#endif  // __x86_64__
