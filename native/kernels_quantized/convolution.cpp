// edgert_quantized::conv2d (docs/operators.md): float32 x, int8 weights with per-output-channel
// qparams, float32 out.
//
// x is quantized to int8, per image with its own qparams (chosen like choose_qparams) or
// with the static input_scale / input_zero_point; every output is the exact integer sum
// Σ (xq - xz)·(wq - wz[o]) over the float conv2d's window (the padding is the real value 0,
// i.e. xq = xz, a zero term), then float32(sum) · (xs · ws[o]) + bias[o], then the
// activation. Four paths compute the sums:
//   - depthwise convolutions (one input channel per group, windows of at most 256 taps,
//     every zero point in int8's range, padding at most about the input's size): directly,
//     the float conv2d's plane kernel on the centered values in float32, where every sum of
//     such products is an exact integer (see "the depthwise path" below);
//   - the int8 GEMM (int8_gemm.hpp), the general case: the weights of a group are its left
//     operand (packed once per program by the prepare function when the weight is a
//     constant), blocks of 64 output positions of the im2col matrix its right operand,
//     gathered from a zero-padded byte copy of the quantized input (the padding holds xz)
//     and interleaved into panels; the epilogue writes NCHW rows directly;
//   - int16 dot products of gathered windows (integer_dot.hpp) for groups of fewer than
//     kMinGemmChannels output channels (depthwise convolutions the path above does not take),
//     or padding far larger than the input, when every zero point lies in int8's range;
//   - int64 loops otherwise (a static input zero point outside int8's range, windows longer
//     than the GEMM's depth).
// Integer sums do not depend on their order, so every path gives the same outputs on every
// instruction set and thread count.
#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "../kernels/depthwise_phases.hpp"
#include "../kernels/isa.hpp"
#include "../kernels/simd.hpp"
#include "../kernels/sliding_window.hpp"
#include "edgert/threadpool.h"
#include "int8_gemm.hpp"
#include "integer_dot.hpp"
#include "quantized.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

namespace edgert_quantized {
namespace {

using edgert::PrepareContext;
using edgert::kernels::ConvolutionGeometry;
using edgert::kernels::kParallelGrain;
using edgert::kernels::optional_input;

constexpr QuantRange kInt8{-128, 127};
constexpr int64_t kMaxInt16Taps = 33025;   // 33025 · 255² < 2^31
constexpr int64_t kPositionsPerTask = 64;  // output positions of one work item

struct QuantizedConvolution {
  ConvolutionGeometry g;
  const float* x;                     // contiguous [N, C, H, W]
  const int8_t* weight;               // contiguous [O, C/groups, KH, KW]
  const float* weight_scales;         // [O]
  const int32_t* weight_zero_points;  // [O]
  const float* bias;                  // [O] or null
  float* out;                         // [N, O, OH, OW]
  bool relu;
  std::vector<float> image_scales;  // per image
  std::vector<int32_t> image_zero_points;
};

// Every image's qparams: the static ones, or each image's own (its values must be finite).
Status choose_image_qparams(const KernelContext& context, QuantizedConvolution& conv, const Tensor* scale,
                            const Tensor* zero_point) {
  const int64_t image = conv.g.channels * conv.g.height * conv.g.width;
  float fixed_scale = 1.0f;
  int32_t fixed_zero = 0;
  if (scale) EDGERT_RETURN_IF_ERROR(read_qparams(context, scale, zero_point, "input", fixed_scale, fixed_zero));
  for (int64_t n = 0; n < conv.g.batch; ++n) {
    float s = fixed_scale;
    int32_t z = fixed_zero;
    if (!scale) {
      float low, high;
      if (!int8_gemm().range(conv.x + n * image, image, low, high)) {
        return invalid(context, "input holds a non-finite value");
      }
      qparams_of_range(low, high, kInt8, s, z);
    }
    conv.image_scales.push_back(s);
    conv.image_zero_points.push_back(z);
  }
  return Status::success();
}

// x quantized with its image's qparams, minus the zero point. When the padding is at most
// about the input's size the planes are stored zero-padded (a centered 0 is the real value
// 0, what the padding holds), so a window's taps need no bounds checks.
template <class Integer>
struct CenteredInput {
  std::vector<Integer> data;
  int64_t height, width;  // of a stored plane
  bool padded;
};

// target[i] = quantize_value(source[i], scale, zero, int8) - zero for i < count.
// (Inlined into quantize_centered_avx2 for its last elements: see EDGERT_BASELINE_TAIL.)
template <class Integer>
EDGERT_BASELINE_TAIL void quantize_centered_scalar(const float* source, int64_t count, float scale, int32_t zero,
                                                   Integer* target) {
  for (int64_t i = 0; i < count; ++i) {
    target[i] = static_cast<Integer>(int64_t{quantize_value(source[i], scale, zero, kInt8)} - zero);
  }
}

#if defined(__x86_64__)
// quantize_value on eight lanes, the same float32 operations: x / scale, round to nearest
// even, NaN to 0, + zero, clamped to [-128, 127] (the value is never NaN by then, so max and
// min are fmax and fmin). Only for zero points in int8's range (the int16 path).
__attribute__((target("avx2"))) void quantize_centered_avx2(const float* source, int64_t count, float scale,
                                                            int32_t zero, int16_t* target) {
  const __m256 scales = _mm256_set1_ps(scale), zeros = _mm256_set1_ps(static_cast<float>(zero));
  const __m256 low = _mm256_set1_ps(-128.0f), high = _mm256_set1_ps(127.0f);
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    __m256 rounded = _mm256_round_ps(_mm256_div_ps(_mm256_loadu_ps(source + i), scales),
                                     _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC);
    rounded = _mm256_andnot_ps(_mm256_cmp_ps(rounded, rounded, _CMP_UNORD_Q), rounded);
    rounded = _mm256_min_ps(_mm256_max_ps(_mm256_add_ps(rounded, zeros), low), high);
    const __m256i centered = _mm256_sub_epi32(_mm256_cvtps_epi32(rounded), _mm256_set1_epi32(zero));
    const __m128i packed = _mm_packs_epi32(_mm256_castsi256_si128(centered), _mm256_extracti128_si256(centered, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(target + i), packed);
  }
  quantize_centered_scalar(source + i, count - i, scale, zero, target + i);
}
#endif

template <class Integer>
void quantize_centered(const float* source, int64_t count, float scale, int32_t zero, Integer* target) {
#if defined(__x86_64__)
  if constexpr (std::is_same_v<Integer, int16_t>) {
    if (edgert::kernels::kernel_isa() != edgert::kernels::Isa::Portable && zero >= -128 && zero <= 127) {
      return quantize_centered_avx2(source, count, scale, zero, target);
    }
  }
#endif
  quantize_centered_scalar(source, count, scale, zero, target);
}

template <class Integer>
CenteredInput<Integer> centered_input(const QuantizedConvolution& conv) {
  const ConvolutionGeometry& g = conv.g;
  CenteredInput<Integer> input;
  input.padded = g.padding.height <= g.height + 32 && g.padding.width <= g.width + 32;
  const int64_t pad_h = input.padded ? g.padding.height : 0, pad_w = input.padded ? g.padding.width : 0;
  input.height = g.height + 2 * pad_h, input.width = g.width + 2 * pad_w;
  input.data.assign(static_cast<size_t>(g.batch * g.channels * input.height * input.width), Integer{0});
  const int64_t rows = g.batch * g.channels * g.height;
  edgert::parallel_for(
      0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, g.width)), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {  // row = (n·C + c)·H + h
          const size_t n = static_cast<size_t>(row / (g.channels * g.height));
          const int32_t zero = conv.image_zero_points[n];
          const float* source = conv.x + row * g.width;
          Integer* target =
              input.data.data() + ((row / g.height) * input.height + row % g.height + pad_h) * input.width + pad_w;
          quantize_centered(source, g.width, conv.image_scales[n], zero, target);
        }
      });
  return input;
}

// Weights minus their channel's zero point, each output channel's row padded with zeros
// to `row_length`.
template <class Integer>
std::vector<Integer> centered_weights(const QuantizedConvolution& conv, int64_t row_length) {
  const int64_t patch = conv.g.patch();
  std::vector<Integer> centered(static_cast<size_t>(conv.g.out_channels * row_length), 0);
  for (int64_t o = 0; o < conv.g.out_channels; ++o) {
    for (int64_t p = 0; p < patch; ++p) {
      centered[static_cast<size_t>(o * row_length + p)] =
          static_cast<Integer>(int64_t{conv.weight[o * patch + p]} - conv.weight_zero_points[o]);
    }
  }
  return centered;
}

// The centered inputs of output position (oh, ow)'s window in group `group` of image n,
// in (c, kh, kw) order, 0 for the padding.
template <class Integer>
void gather_patch(const QuantizedConvolution& conv, const CenteredInput<Integer>& input, int64_t n, int64_t group,
                  int64_t oh, int64_t ow, Integer* patch) {
  const ConvolutionGeometry& g = conv.g;
  const int64_t plane = input.height * input.width;
  const Integer* image = input.data.data() + (n * g.channels + group * g.group_channels()) * plane;
  const int64_t top = oh * g.stride.height - (input.padded ? 0 : g.padding.height);
  const int64_t left = ow * g.stride.width - (input.padded ? 0 : g.padding.width);
  for (int64_t c = 0; c < g.group_channels(); ++c) {
    for (int64_t kh = 0; kh < g.kernel_height; ++kh) {
      const int64_t ih = top + kh * g.dilation.height;
      if (input.padded) {
        const Integer* row = image + c * plane + ih * input.width + left;
        for (int64_t kw = 0; kw < g.kernel_width; ++kw) *patch++ = row[kw * g.dilation.width];
        continue;
      }
      for (int64_t kw = 0; kw < g.kernel_width; ++kw) {
        const int64_t iw = left + kw * g.dilation.width;
        const bool inside = ih >= 0 && ih < g.height && iw >= 0 && iw < g.width;
        *patch++ = inside ? image[c * plane + ih * input.width + iw] : Integer{0};
      }
    }
  }
}

// out[n, o, position] from its exact sum.
void finish_output(const QuantizedConvolution& conv, int64_t n, int64_t o, int64_t position, int64_t sum) {
  float v = static_cast<float>(sum) * (conv.image_scales[static_cast<size_t>(n)] * conv.weight_scales[o]);
  if (conv.bias) v += conv.bias[o];
  if (conv.relu) v = v > 0.0f ? v : 0.0f;
  conv.out[(n * conv.g.out_channels + o) * conv.g.out_plane() + position] = v;
}

// Sums of `count` positions from `first` of (image n, group) into sums, one row of
// group_out_channels per position.
using SumsFunction = void (*)(const void* patches, const void* weights, int64_t length, int64_t channels, int64_t count,
                              int64_t* sums);

// Patches [from, count) one by one against every weight row (integer_dot.hpp).
void sums_int16_rows(const int16_t* patches, const int16_t* weights, int64_t length, int64_t channels, int64_t from,
                     int64_t count, int64_t* sums) {
  std::vector<int32_t> row(static_cast<size_t>(channels));
  for (int64_t i = from; i < count; ++i) {
    dot_rows(patches + i * length, weights, length, channels, row.data());
    std::copy(row.begin(), row.end(), sums + i * channels);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) int32_t lane_sum(__m256i lanes) {
  __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(lanes), _mm256_extracti128_si256(lanes, 1));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0x4e));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, 0xb1));
  return _mm_cvtsi128_si32(sum);
}

// Four patches against weight rows o and o + 1: eight int32 sums (exact, as dot_rows).
// Each weight chunk loaded serves four patches, so a group's weights are read once per
// four output positions.
__attribute__((target("avx2"))) void dot_block_avx2(const int16_t* patches, const int16_t* weights, int64_t length,
                                                    int64_t channels, int64_t o, int64_t* sums) {
  __m256i accumulators[4][2];
  for (auto& row : accumulators) row[0] = row[1] = _mm256_setzero_si256();
  const int16_t* w0 = weights + o * length;
  const int16_t* w1 = w0 + length;
  for (int64_t k = 0; k < length; k += kDotBlock) {
    const __m256i weight0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + k));
    const __m256i weight1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1 + k));
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(patches + i * length + k));
      accumulators[i][0] = _mm256_add_epi32(accumulators[i][0], _mm256_madd_epi16(x, weight0));
      accumulators[i][1] = _mm256_add_epi32(accumulators[i][1], _mm256_madd_epi16(x, weight1));
    }
  }
  for (int i = 0; i < 4; ++i) {
    sums[i * channels + o] = lane_sum(accumulators[i][0]);
    sums[i * channels + o + 1] = lane_sum(accumulators[i][1]);
  }
}

// Blocks of four patches × two weight rows; returns how many patches it did (multiples of
// four). The last weight row of an odd count and the last patches are the caller's, through
// dot_rows (baseline code, not called from here).
__attribute__((target("avx2"))) int64_t sums_int16_blocks_avx2(const int16_t* patches, const int16_t* weights,
                                                               int64_t length, int64_t channels, int64_t count,
                                                               int64_t* sums) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    for (int64_t o = 0; o + 2 <= channels; o += 2)
      dot_block_avx2(patches + i * length, weights, length, channels, o, sums + i * channels);
  }
  return i;
}
#endif

void sums_int16(const void* patches, const void* weights, int64_t length, int64_t channels, int64_t count,
                int64_t* sums) {
  const int16_t* x = static_cast<const int16_t*>(patches);
  const int16_t* w = static_cast<const int16_t*>(weights);
#if defined(__x86_64__)
  if (edgert::kernels::kernel_isa() != edgert::kernels::Isa::Portable) {
    const int64_t done = sums_int16_blocks_avx2(x, w, length, channels, count, sums);
    for (int64_t i = 0; i < done && channels % 2 == 1; ++i) {
      int32_t last = 0;
      dot_rows(x + i * length, w + (channels - 1) * length, length, 1, &last);
      sums[i * channels + channels - 1] = last;
    }
    return sums_int16_rows(x, w, length, channels, done, count, sums);
  }
#endif
  sums_int16_rows(x, w, length, channels, 0, count, sums);
}

void sums_int64(const void* patches, const void* weights, int64_t length, int64_t channels, int64_t count,
                int64_t* sums) {
  const int64_t* x = static_cast<const int64_t*>(patches);
  const int64_t* w = static_cast<const int64_t*>(weights);
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t o = 0; o < channels; ++o) {
      int64_t sum = 0;
      for (int64_t p = 0; p < length; ++p) sum += x[i * length + p] * w[o * length + p];
      sums[i * channels + o] = sum;
    }
  }
}

// Every output: work items of kPositionsPerTask positions of one (image, group).
template <class Integer>
void convolve(const QuantizedConvolution& conv, int64_t row_length, SumsFunction sums_of) {
  const ConvolutionGeometry& g = conv.g;
  const CenteredInput<Integer> input = centered_input<Integer>(conv);
  const std::vector<Integer> weights = centered_weights<Integer>(conv, row_length);
  const int64_t blocks = (g.out_plane() + kPositionsPerTask - 1) / kPositionsPerTask;
  const int64_t work = kPositionsPerTask * std::max<int64_t>(1, row_length * g.group_out_channels());
  edgert::parallel_for(
      0, g.batch * g.groups * blocks, std::max<int64_t>(1, kParallelGrain / work), [&](int64_t begin, int64_t end) {
        std::vector<Integer> patches(static_cast<size_t>(kPositionsPerTask * row_length), Integer{0});
        std::vector<int64_t> sums(static_cast<size_t>(kPositionsPerTask * g.group_out_channels()));
        for (int64_t task = begin; task < end; ++task) {
          const int64_t n = task / (g.groups * blocks), group = task / blocks % g.groups;
          const int64_t first = task % blocks * kPositionsPerTask;
          const int64_t count = std::min(kPositionsPerTask, g.out_plane() - first);
          for (int64_t i = 0; i < count; ++i) {
            gather_patch(conv, input, n, group, (first + i) / g.out_width, (first + i) % g.out_width,
                         patches.data() + i * row_length);
          }
          const Integer* group_weights = weights.data() + group * g.group_out_channels() * row_length;
          sums_of(patches.data(), group_weights, row_length, g.group_out_channels(), count, sums.data());
          for (int64_t i = 0; i < count; ++i) {
            for (int64_t o = 0; o < g.group_out_channels(); ++o) {
              finish_output(conv, n, group * g.group_out_channels() + o, first + i,
                            sums[static_cast<size_t>(i * g.group_out_channels() + o)]);
            }
          }
        }
      });
}

bool fits_int16(const QuantizedConvolution& conv) {
  const auto in_int8 = [](int32_t zero) { return zero >= -128 && zero <= 127; };
  return conv.g.patch() <= kMaxInt16Taps &&
         std::all_of(conv.image_zero_points.begin(), conv.image_zero_points.end(), in_int8) &&
         std::all_of(conv.weight_zero_points, conv.weight_zero_points + conv.g.out_channels, in_int8);
}

// ------------------------------------------------------------------- the depthwise path

// One input channel per group, the float conv2d's depthwise kernel for the integer sums
// (native/kernels/convolution.cpp, DepthwisePlanes): each input channel is quantized,
// centered (xq - xz), once into float32 phases split by stride along both dimensions, phase
// (qh, qw) holding padded[qh + sh·i][qw + sw·j] at i·L + j with pitch L = ceil(Wp / sw), so
// tap (kh, kw) of output (oh, ow), numbered p = oh·L + ow, reads one contiguous run at a
// fixed offset whatever the stride and dilation, and the sums run over p in vectors across
// rows.
// The sums are exact: every centered input and weight is an integer of magnitude at most 255
// (zero points in int8's range), so every product and every partial sum of at most
// kMaxDepthwiseTaps products is an integer below 2^24, which float32 holds exactly. The sum
// is the integer sum of the other paths, and float32(sum) · (xs · ws[o]) + bias[o] and the
// relu are the same float32 operations as finish_output's.
constexpr int64_t kMaxDepthwiseTaps = 256;  // 256 · 255² < 2^24

// x rounded to an integer, halfway cases to even (std::nearbyint in the default rounding
// mode). The portable add-and-subtract rounding at every width: an overload returning a
// 512-bit vector from an avx512f-only function changes the ABI of its callers, which clang
// (the macOS and Windows toolchain) refuses in the generic lambdas that call it.
template <class V>
inline __attribute__((always_inline)) V round_even(const V& x) {
  return edgert::kernels::simd::round_half_even(x);
}

struct DepthwisePlanes : edgert::kernels::DepthwisePhases {
  std::vector<float> weights;    // one output channel's centered weights, as float32
  std::vector<float> quantized;  // one quantized input plane, before its split into phases

  explicit DepthwisePlanes(const ConvolutionGeometry& geometry) : DepthwisePhases(geometry) {
    weights.resize(offsets.size());
    quantized.resize(static_cast<size_t>(g.height * g.width));
  }

  // Quantizes input channel `index` of image n into the phases, centered (their padding
  // stays zero: a centered 0 is the real value 0).
  void load_channel(const QuantizedConvolution& conv, int64_t n, int64_t index) {
    if (index == channel) return;
    channel = index;
    const float scale = conv.image_scales[static_cast<size_t>(n)];
    const int32_t zero = conv.image_zero_points[static_cast<size_t>(n)];
    // The whole plane at once (rows of 7 or 14 values would each end in a partial vector).
    quantize_centered_floats(conv.x + index * g.height * g.width, g.height * g.width, scale, zero, quantized.data());
    split(quantized.data(), deinterleave);
  }

  // even[m] = row[2m] and odd[m] = row[2m + 1] for the m those are below count: two vectors
  // of the row at a time, their even and odd lanes.
  static void deinterleave(const float* row, int64_t count, float* even, float* odd) {
    namespace simd = edgert::kernels::simd;
    simd::dispatch([=](auto width) {
      using V = typename decltype(width)::Float;
      constexpr int64_t kLanes = decltype(width)::lanes;
      int64_t m = 0;
      for (; 2 * (m + kLanes) <= count; m += kLanes) {
        const V a = simd::load<V>(row + 2 * m), b = simd::load<V>(row + 2 * m + kLanes);
        if constexpr (kLanes == 16) {
          simd::store(even + m,
                      __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30));
          simd::store(odd + m,
                      __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31));
        } else if constexpr (kLanes == 8) {
          simd::store(even + m, __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14));
          simd::store(odd + m, __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15));
        } else {
          simd::store(even + m, __builtin_shufflevector(a, b, 0, 2, 4, 6));
          simd::store(odd + m, __builtin_shufflevector(a, b, 1, 3, 5, 7));
        }
      }
      for (; 2 * m < count; ++m) {
        even[m] = row[2 * m];
        if (2 * m + 1 < count) odd[m] = row[2 * m + 1];
      }
    });
  }

  // out[i] = quantize_value(x[i], scale, zero, int8) - zero as float32 for i < count, in
  // vectors: the same float32 operations (x / scale rounded to nearest even, NaN to 0, + zero,
  // clamped to [-128, 127]) and an exact subtraction (zero is in int8's range).
  static void quantize_centered_floats(const float* x, int64_t count, float scale, int32_t zero, float* out) {
    namespace simd = edgert::kernels::simd;
    const float zero_value = static_cast<float>(zero);
    simd::map(x, out, count, [scale, zero_value](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      V rounded = round_even(v / simd::splat<V>(scale));
      rounded = simd::select(simd::is_nan(rounded), V{}, rounded) + simd::splat<V>(zero_value);
      rounded = simd::select(rounded < simd::splat<V>(-128.0f), simd::splat<V>(-128.0f), rounded);
      rounded = simd::select(rounded > simd::splat<V>(127.0f), simd::splat<V>(127.0f), rounded);
      return rounded - simd::splat<V>(zero_value);
    });
  }

  // Output plane [OH, OW] of output channel o of image n from the loaded channel.
  void compute(const QuantizedConvolution& conv, int64_t n, int64_t o, float* out) {
    const int64_t taps = static_cast<int64_t>(offsets.size());
    for (int64_t t = 0; t < taps; ++t) {
      weights[static_cast<size_t>(t)] =
          static_cast<float>(int64_t{conv.weight[o * taps + t]} - conv.weight_zero_points[o]);
    }
    const float factor = conv.image_scales[static_cast<size_t>(n)] * conv.weight_scales[o];
    depthwise_sums(plane.data(), offsets.data(), weights.data(), taps, factor, conv.bias ? conv.bias + o : nullptr,
                   conv.relu, positions, sums.data());
    copy_out(out);
  }

  // out[p] = finished(Σ_t plane[offsets[t] + p]·weights[t]) for p below `count` rounded up to
  // 16 (sums and plane hold that many): four vectors of outputs side by side, each tap one
  // load, one multiply and one add per vector.
  static void depthwise_sums(const float* plane, const int64_t* offsets, const float* weights, int64_t taps,
                             float factor, const float* bias, bool relu, int64_t count, float* out) {
    namespace simd = edgert::kernels::simd;
    simd::dispatch([=](auto width) {
      using V = typename decltype(width)::Float;
      constexpr int64_t kLanes = decltype(width)::lanes;
      const auto finish = [&](const V& sum) {
        V v = sum * simd::splat<V>(factor);
        if (bias) v = v + simd::splat<V>(*bias);
        return relu ? simd::select(v > V{}, v, V{}) : v;
      };
      int64_t p = 0;
      for (; p + 4 * kLanes <= count; p += 4 * kLanes) {
        V s0{}, s1{}, s2{}, s3{};
        for (int64_t t = 0; t < taps; ++t) {
          const V w = simd::splat<V>(weights[t]);
          const float* x = plane + offsets[t] + p;
          s0 = s0 + simd::load<V>(x) * w;
          s1 = s1 + simd::load<V>(x + kLanes) * w;
          s2 = s2 + simd::load<V>(x + 2 * kLanes) * w;
          s3 = s3 + simd::load<V>(x + 3 * kLanes) * w;
        }
        simd::store(out + p, finish(s0));
        simd::store(out + p + kLanes, finish(s1));
        simd::store(out + p + 2 * kLanes, finish(s2));
        simd::store(out + p + 3 * kLanes, finish(s3));
      }
      for (; p < count; p += kLanes) {
        V s{};
        for (int64_t t = 0; t < taps; ++t) s = s + simd::load<V>(plane + offsets[t] + p) * simd::splat<V>(weights[t]);
        simd::store(out + p, finish(s));
      }
    });
  }
};

// Every output plane (n, o), on the thread pool; output channel o reads input channel
// o / (O / groups).
void convolve_depthwise(const QuantizedConvolution& conv) {
  const ConvolutionGeometry& g = conv.g;
  const int64_t work = std::max<int64_t>(1, g.out_plane() * g.kernel_height * g.kernel_width);
  edgert::parallel_for(0, g.batch * g.out_channels, std::max<int64_t>(1, kParallelGrain / work),
                       [&](int64_t begin, int64_t end) {
                         DepthwisePlanes planes(g);
                         for (int64_t index = begin; index < end; ++index) {
                           const int64_t n = index / g.out_channels, o = index % g.out_channels;
                           planes.load_channel(conv, n, n * g.channels + o / g.group_out_channels());
                           planes.compute(conv, n, o, conv.out + index * g.out_plane());
                         }
                       });
}

// One input channel per group, windows of at most kMaxDepthwiseTaps, every zero point in
// int8's range, and the padding at most about the input's size (the stored planes are
// padded).
bool depthwise_applies(const QuantizedConvolution& conv) {
  const ConvolutionGeometry& g = conv.g;
  return g.group_channels() == 1 && g.kernel_height * g.kernel_width <= kMaxDepthwiseTaps &&
         g.padding.height <= g.height + 32 && g.padding.width <= g.width + 32 && fits_int16(conv);
}

// ------------------------------------------------------------------- the GEMM path

constexpr int64_t kMinGemmChannels = 4;      // output channels per group for the GEMM path
constexpr int64_t kBlock = kMaxTileColumns;  // output positions per work item
constexpr int64_t kCopySlack = 16;           // bytes copy_run may read and write past its run

// The weights as the GEMM's left operand: one row of (c, kh, kw) taps per output channel,
// for the instruction set they were packed for.
struct PackedFilters {
  IntegerIsa isa;
  std::vector<int64_t> shape;    // the weight's
  std::vector<int16_t> storage;  // int8 or int16 values, rows padded to the GEMM's depth
  std::vector<int32_t> sums;     // Σ_k wq[o, k]
};

std::shared_ptr<PackedFilters> pack_filters(const int8_t* weight, const std::vector<int64_t>& shape) {
  const Int8Gemm& gemm = int8_gemm();
  const int64_t channels = shape[0], taps = shape[1] * shape[2] * shape[3];
  auto packed = std::make_shared<PackedFilters>();
  packed->isa = gemm.isa;
  packed->shape = shape;
  packed->storage.assign(static_cast<size_t>((channels * padded_depth(taps) * left_element_size(gemm) + 1) / 2), 0);
  packed->sums.resize(static_cast<size_t>(channels));
  pack_left(gemm, weight, channels, taps, packed->storage.data(), packed->sums.data());
  return packed;
}

// The taps of one output channel, C/groups · KH · KW, when it is within the GEMM's depth.
bool gemm_taps(const std::vector<int64_t>& shape, int64_t& taps) {
  int64_t area = 0;
  return !__builtin_mul_overflow(shape[2], shape[3], &area) && !__builtin_mul_overflow(shape[1], area, &taps) &&
         taps <= kMaxDepth;
}

// A constant int8 [O, C/groups, KH, KW] weight is packed once for every run; anything else
// is left to the kernel, which reports what is wrong.
Status prepare_conv2d(const PrepareContext& context, std::shared_ptr<const void>& state) {
  const Tensor* weight = context.constants.size() > 1 ? context.constants[1] : nullptr;
  int64_t taps = 0;
  if (!weight || weight->dtype() != DType::Int8 || weight->dim() != 4 || !gemm_taps(weight->shape(), taps)) {
    return Status::success();
  }
  const Tensor contiguous = weight->contiguous();
  state = pack_filters(contiguous.data_as<int8_t>(), weight->shape());
  return Status::success();
}

// The quantized input as the panels' bytes (q + bias), every plane with its zero padding
// written out as the byte of the image's zero point.
struct PaddedPlanes {
  std::vector<uint8_t> data;
  int64_t height, width;  // of a plane
};

uint8_t encoded(int32_t value, uint8_t bias) {
  return static_cast<uint8_t>(static_cast<uint8_t>(value) ^ bias);
}

PaddedPlanes padded_planes(const Int8Gemm& gemm, const QuantizedConvolution& conv) {
  const ConvolutionGeometry& g = conv.g;
  PaddedPlanes planes;
  planes.height = g.height + 2 * g.padding.height, planes.width = g.width + 2 * g.padding.width;
  const int64_t image = g.channels * planes.height * planes.width;
  planes.data.resize(static_cast<size_t>(g.batch * image + kCopySlack));
  // Without padding a plane is one run of values (quantized at once: no short rows with a
  // scalar tail each), and nothing is left to fill with the zero point.
  const bool unpadded = g.padding.height == 0 && g.padding.width == 0;
  for (int64_t n = 0; n < g.batch && !unpadded; ++n) {
    std::fill_n(planes.data.begin() + n * image, image,
                encoded(conv.image_zero_points[static_cast<size_t>(n)], gemm.panel_bias));
  }
  const int64_t run = unpadded ? g.height * g.width : g.width;
  const int64_t runs_per_image = unpadded ? g.channels : g.channels * g.height;
  edgert::parallel_for(
      0, g.batch * runs_per_image, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, run)),
      [&](int64_t begin, int64_t end) {
        for (int64_t index = begin; index < end; ++index) {  // a plane (n·C + c), or its row h
          const size_t n = static_cast<size_t>(index / runs_per_image);
          const int64_t plane = unpadded ? index : index / g.height, h = unpadded ? 0 : index % g.height;
          uint8_t* target =
              planes.data.data() + (plane * planes.height + h + g.padding.height) * planes.width + g.padding.width;
          gemm.quantize_bytes(conv.x + index * run, run, conv.image_scales[n], conv.image_zero_points[n],
                              gemm.panel_bias, target);
        }
      });
  return planes;
}

// Copies count bytes 16 at a time: it reads and writes up to kCopySlack - 1 bytes past the
// run (the buffers hold that slack; a later run or the block's zeroing overwrites them).
inline void copy_run(uint8_t* target, const uint8_t* source, int64_t count) {
#if defined(__x86_64__)
  for (int64_t i = 0; i < count; i += 16) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(target + i),
                     _mm_loadu_si128(reinterpret_cast<const __m128i*>(source + i)));
  }
#elif defined(__aarch64__)
  for (int64_t i = 0; i < count; i += 16) vst1q_u8(target + i, vld1q_u8(source + i));
#else
  std::memcpy(target, source, static_cast<size_t>(count));
#endif
}

// Output positions [offset, offset + count) of a block that lie in output row oh from ow on.
struct PositionRun {
  int64_t oh, ow, count, offset;
};

std::vector<PositionRun> position_runs(const ConvolutionGeometry& g, int64_t first, int64_t count) {
  std::vector<PositionRun> runs;
  for (int64_t offset = 0; offset < count;) {
    const int64_t position = first + offset;
    const int64_t oh = position / g.out_width, ow = position % g.out_width;
    const int64_t length = std::min(count - offset, g.out_width - ow);
    runs.push_back(PositionRun{oh, ow, length, offset});
    offset += length;
  }
  return runs;
}

// The block's im2col rows: rows[k * kBlock + j] is tap k = (c, kh, kw) of position first + j
// in group `group` of image n (the padding's bytes included), and zeros for k in
// [taps, depth). Runs are written in order, each overwriting what the previous one copied
// past its end; `rows` holds kCopySlack bytes more than depth rows.
void gather_block(const QuantizedConvolution& conv, const PaddedPlanes& planes, int64_t n, int64_t group, int64_t first,
                  int64_t count, int64_t depth, uint8_t* rows) {
  const ConvolutionGeometry& g = conv.g;
  const int64_t plane = planes.height * planes.width;
  const uint8_t* image = planes.data.data() + (n * g.channels + group * g.group_channels()) * plane;
  // A 1×1 window with stride 1 and no padding reads each channel's positions in a row.
  const bool pointwise = g.kernel_height == 1 && g.kernel_width == 1 && g.stride.height == 1 && g.stride.width == 1 &&
                         g.padding.height == 0 && g.padding.width == 0;
  const std::vector<PositionRun> runs = position_runs(g, first, pointwise ? 0 : count);
  uint8_t* target = rows;
  for (int64_t c = 0; c < g.group_channels(); ++c) {
    const uint8_t* channel = image + c * plane;
    for (int64_t kh = 0; kh < g.kernel_height; ++kh) {
      for (int64_t kw = 0; kw < g.kernel_width; ++kw, target += kBlock) {
        if (pointwise) {
          std::memcpy(target, channel + first, static_cast<size_t>(count));
          continue;
        }
        for (const PositionRun& run : runs) {
          const uint8_t* source = channel + (run.oh * g.stride.height + kh * g.dilation.height) * planes.width +
                                  run.ow * g.stride.width + kw * g.dilation.width;
          if (g.stride.width == 1) {
            copy_run(target + run.offset, source, run.count);
          } else {
            for (int64_t t = 0; t < run.count; ++t) target[run.offset + t] = source[t * g.stride.width];
          }
        }
      }
    }
  }
  std::memset(target, 0, static_cast<size_t>((depth - g.patch()) * kBlock));
}

// The column terms of a block (int8_gemm.hpp): offsets bias + xz, sums Σ_k (x - xz) over
// each position's taps (zero when no weight zero point needs them).
struct BlockColumns {
  int32_t offsets[kBlock], sums[kBlock];
  int64_t wide_offsets[kBlock], wide_sums[kBlock];
  float scales[kBlock];
};

void block_columns(const uint8_t* rows, int64_t taps, int64_t offset, float scale, bool centered_sums,
                   BlockColumns& columns) {
  uint32_t totals[kBlock] = {};
  for (int64_t k = 0; k < taps && centered_sums; ++k) {
    for (int64_t j = 0; j < kBlock; ++j) totals[j] += rows[k * kBlock + j];
  }
  for (int64_t j = 0; j < kBlock; ++j) {
    columns.wide_offsets[j] = offset, columns.offsets[j] = static_cast<int32_t>(offset);
    columns.wide_sums[j] = centered_sums ? int64_t{totals[j]} - taps * offset : 0;
    columns.sums[j] = static_cast<int32_t>(columns.wide_sums[j]);
    columns.scales[j] = scale;
  }
}

// The epilogue of group `group` of image n, for the block starting at position `first`.
Epilogue block_epilogue(const QuantizedConvolution& conv, const PackedFilters& filters, const BlockColumns& columns,
                        int64_t n, int64_t group, int64_t first, bool exact_in_int32) {
  const ConvolutionGeometry& g = conv.g;
  const int64_t channel = group * g.group_out_channels();
  Epilogue e;
  e.row_sums = filters.sums.data() + channel, e.row_zeros = conv.weight_zero_points + channel;
  e.row_scales = conv.weight_scales + channel, e.row_bias = conv.bias ? conv.bias + channel : nullptr;
  e.column_offsets = columns.offsets, e.column_sums = columns.sums;
  e.wide_column_offsets = columns.wide_offsets, e.wide_column_sums = columns.wide_sums;
  e.column_scales = columns.scales;
  e.exact_in_int32 = exact_in_int32, e.relu = conv.relu;
  e.out = conv.out + (n * g.out_channels + channel) * g.out_plane() + first, e.out_stride = g.out_plane();
  return e;
}

// What every block of a GEMM convolution shares.
struct GemmConvolution {
  const Int8Gemm& gemm;
  const QuantizedConvolution& conv;
  const PackedFilters& filters;
  PaddedPlanes planes;
  int64_t taps, depth, bytes, blocks;
  bool exact_in_int32;  // every weight zero point in int8's range and taps <= kMaxInt32Depth
  bool centered_sums;   // some weight zero point is not 0: the blocks' column sums are needed
};

// A thread's buffers: a block's im2col rows and its panels.
struct BlockScratch {
  std::vector<uint8_t> rows, panels;
  BlockColumns columns;
};

// Work item `task`: kBlock positions of one (image, group), gathered, interleaved into
// panels and multiplied by the group's filters.
void convolve_block(const GemmConvolution& work, int64_t task, BlockScratch& scratch) {
  const ConvolutionGeometry& g = work.conv.g;
  const int64_t n = task / (g.groups * work.blocks), group = task / work.blocks % g.groups;
  const int64_t first = task % work.blocks * kBlock, count = std::min(kBlock, g.out_plane() - first);
  gather_block(work.conv, work.planes, n, group, first, count, work.depth, scratch.rows.data());
  interleave_block(scratch.rows.data(), work.depth, scratch.panels.data(), work.bytes);
  const size_t image = static_cast<size_t>(n);
  block_columns(scratch.rows.data(), work.taps, int64_t{work.gemm.panel_bias} + work.conv.image_zero_points[image],
                work.conv.image_scales[image], work.centered_sums, scratch.columns);
  const int64_t channel = group * g.group_out_channels();
  const char* filters =
      reinterpret_cast<const char*>(work.filters.storage.data()) + channel * work.depth * left_element_size(work.gemm);
  const Product product{filters,
                        work.depth,
                        g.group_out_channels(),
                        scratch.panels.data(),
                        count,
                        work.depth,
                        block_epilogue(work.conv, work.filters, scratch.columns, n, group, first, work.exact_in_int32)};
  multiply(work.gemm, product, 0, g.group_out_channels(), 0, panel_count(count));
}

// Every output, block by block on the thread pool (each output computed by one thread).
void convolve_gemm(const QuantizedConvolution& conv, const PackedFilters& filters) {
  const Int8Gemm& gemm = int8_gemm();
  const ConvolutionGeometry& g = conv.g;
  const int32_t* zeros = conv.weight_zero_points;
  const auto in_int8 = [](int32_t zero) { return zero >= -128 && zero <= 127; };
  const int64_t taps = g.patch(), depth = padded_depth(taps);
  const GemmConvolution work{gemm,
                             conv,
                             filters,
                             padded_planes(gemm, conv),
                             taps,
                             depth,
                             panel_bytes(depth),
                             (g.out_plane() + kBlock - 1) / kBlock,
                             taps <= kMaxInt32Depth && std::all_of(zeros, zeros + g.out_channels, in_int8),
                             std::any_of(zeros, zeros + g.out_channels, [](int32_t zero) { return zero != 0; })};
  const int64_t block_work = std::max<int64_t>(1, g.group_out_channels() * kBlock * std::max<int64_t>(depth, 1));
  edgert::parallel_for(0, g.batch * g.groups * work.blocks, std::max<int64_t>(1, kParallelMultiplyAdds / block_work),
                       [&](int64_t begin, int64_t end) {
                         BlockScratch scratch{std::vector<uint8_t>(static_cast<size_t>(depth * kBlock + kCopySlack)),
                                              std::vector<uint8_t>(static_cast<size_t>(kMaxTilePanels * work.bytes)),
                                              {}};
                         for (int64_t task = begin; task < end; ++task) convolve_block(work, task, scratch);
                       });
}

// The GEMM serves groups of at least kMinGemmChannels output channels whose windows fit its
// depth, when the padded input is not much larger than the input and every image's zero
// point is a byte (the padding holds it).
bool gemm_applies(const QuantizedConvolution& conv) {
  const ConvolutionGeometry& g = conv.g;
  const auto in_int8 = [](int32_t zero) { return zero >= -128 && zero <= 127; };
  return g.group_out_channels() >= kMinGemmChannels && g.patch() <= kMaxDepth && g.padding.height <= g.height + 32 &&
         g.padding.width <= g.width + 32 &&
         std::all_of(conv.image_zero_points.begin(), conv.image_zero_points.end(), in_int8);
}

// The prepared filters when they were packed from this weight for this instruction set,
// else the weight packed now into `packed`.
const PackedFilters& filters_for(const KernelContext& context, const Tensor& weight,
                                 std::shared_ptr<const PackedFilters>& packed) {
  const auto* prepared = static_cast<const PackedFilters*>(context.prepared);
  if (prepared && prepared->isa == int8_gemm().isa && prepared->shape == weight.shape()) return *prepared;
  packed = pack_filters(weight.data_as<int8_t>(), weight.shape());
  return *packed;
}

Status check_dtypes(const KernelContext& context, const Tensor& x, const Tensor& weight) {
  if (x.dtype() != DType::Float32) return invalid(context, "input must be float32");
  if (weight.dtype() != DType::Int8) return invalid(context, "weight must be int8");
  return Status::success();
}

// The bias, and the static qparams given both or neither.
Status check_optional_inputs(const KernelContext& context, const Tensor* bias, int64_t out_channels) {
  if (bias && (bias->dtype() != DType::Float32 || bias->dim() != 1 || bias->shape()[0] != out_channels)) {
    return invalid(context, "bias must be float32 [" + std::to_string(out_channels) + "]");
  }
  const bool has_scale = optional_input(context, 5) != nullptr, has_zero = optional_input(context, 6) != nullptr;
  if (has_scale != has_zero) return invalid(context, "input_scale and input_zero_point must be given together");
  return Status::success();
}

// The outputs on the first path that serves the convolution (see the top of this file).
void convolve_any(const KernelContext& context, const QuantizedConvolution& conv, const Tensor& weight) {
  if (depthwise_applies(conv)) return convolve_depthwise(conv);
  if (gemm_applies(conv)) {
    std::shared_ptr<const PackedFilters> packed;
    return convolve_gemm(conv, filters_for(context, weight, packed));
  }
  if (fits_int16(conv)) {
    return convolve<int16_t>(conv, (conv.g.patch() + kDotBlock - 1) / kDotBlock * kDotBlock, sums_int16);
  }
  convolve<int64_t>(conv, conv.g.patch(), sums_int64);
}

// Inputs: x float32 [N, C, H, W], weight int8 [O, C/groups, KH, KW], weight_scales [O],
// weight_zero_points [O], bias [O] (optional), input_scale [1], input_zero_point [1]
// (optional, together). Attributes as edgert::conv2d.
Status conv2d_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 4, 7));
  const Tensor& x = *context.inputs[0];
  const Tensor& weight = *context.inputs[1];
  const Tensor* bias = optional_input(context, 4);
  EDGERT_RETURN_IF_ERROR(check_dtypes(context, x, weight));
  QuantizedConvolution conv{};
  EDGERT_RETURN_IF_ERROR(edgert::kernels::convolution_geometry(context, x.shape(), weight.shape(), conv.g));
  EDGERT_RETURN_IF_ERROR(check_optional_inputs(context, bias, conv.g.out_channels));
  EDGERT_RETURN_IF_ERROR(edgert::kernels::read_relu_activation(context, conv.relu));
  Tensor scales, zero_points;
  EDGERT_RETURN_IF_ERROR(
      read_channel_qparams(context, context.inputs[2], context.inputs[3], conv.g.out_channels, scales, zero_points));
  const Tensor cx = x.contiguous(), cw = weight.contiguous(), cb = bias ? bias->contiguous() : Tensor();
  conv.x = cx.data_as<float>(), conv.weight = cw.data_as<int8_t>();
  conv.weight_scales = scales.data_as<float>(), conv.weight_zero_points = zero_points.data_as<int32_t>();
  conv.bias = bias ? cb.data_as<float>() : nullptr;
  EDGERT_RETURN_IF_ERROR(choose_image_qparams(context, conv, optional_input(context, 5), optional_input(context, 6)));
  Tensor out = Tensor::uninitialized(DType::Float32, conv.g.output_shape());
  conv.out = out.data_as<float>();
  if (out.numel() > 0) convolve_any(context, conv, cw);
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_PREPARED_OPERATOR("edgert_quantized::conv2d", conv2d_kernel, prepare_conv2d);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::conv2d", {{"stride", edgert::AttributeKind::Ints},
                                                        {"padding", edgert::AttributeKind::Ints},
                                                        {"dilation", edgert::AttributeKind::Ints},
                                                        {"groups", edgert::AttributeKind::Int},
                                                        {"activation", edgert::AttributeKind::String}});

}  // namespace edgert_quantized
