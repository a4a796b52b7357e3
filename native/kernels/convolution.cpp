// conv2d (docs/operators.md): each output is one float32 sum from +0 over (c, kh, kw), c
// outermost, of the rounded products x·w (padding contributing 0·w), then + bias, then the
// activation.
//
// Three ways to compute it, all with that order for every output:
// - pointwise (1×1, stride 1, no padding): out[n, g] = w[g] · x[n, g] as a matrix product
//   on the stored input (gemm.hpp);
// - depthwise (one input channel per group): directly, each output's taps summed in
//   registers, vectorized over the output plane numbered across rows (DepthwisePlanes), or
//   output row by output row when the padding is far wider than the input;
// - otherwise im2col: the matrix [(c, kh, kw), (oh, ow)] of the taps' inputs is the right
//   operand of gemm with the weight [O/g, C/g·KH·KW] on the left, so the product lands in
//   NCHW. gemm asks for it block by block (RightPacker): it is packed straight from x and
//   never materialized.
#include <cmath>
#include <memory>
#include <mutex>
#include <type_traits>
#include <utility>

#include "activation.hpp"
#include "common.hpp"
#include "edgert/threadpool.h"
#include "gemm.hpp"
#include "isa.hpp"
#include "depthwise_phases.hpp"
#include "simd.hpp"
#include "sliding_window.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace edgert::kernels {
namespace {

constexpr float kZeros4[4] = {0.0f, 0.0f, 0.0f, 0.0f};

struct Convolution {
  ConvolutionGeometry geometry;
  const float* x;       // contiguous [N, C, H, W]
  const float* weight;  // contiguous [O, C/groups, KH, KW]
  const float* bias;    // [O] or null
  float* out;           // contiguous [N, O, OH, OW]
  FusedActivation activation;
  // The weight already in gemm's left panels, one matrix per group (prepare), or null.
  const PackedPanels* packed_weight = nullptr;
};

// ----------------------------------------------------------------- matrix-product paths

// One product per (image, group): weight rows of the group times that group's input.
std::vector<GemmOperands> group_products(const Convolution& conv, bool read_input) {
  const ConvolutionGeometry& g = conv.geometry;
  const int64_t plane = g.height * g.width;
  std::vector<GemmOperands> products;
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t group = 0; group < g.groups; ++group) {
      const int64_t first_out = group * g.group_out_channels();
      products.push_back({conv.weight + first_out * g.patch(),
                          read_input ? conv.x + (n * g.channels + group * g.group_channels()) * plane : nullptr,
                          conv.out + (n * g.out_channels + first_out) * g.out_plane(),
                          conv.bias ? conv.bias + first_out : nullptr,
                          conv.packed_weight ? conv.packed_weight->matrix(group) : nullptr});
    }
  }
  return products;
}

bool is_pointwise(const ConvolutionGeometry& g) {
  return g.kernel_height == 1 && g.kernel_width == 1 && g.stride.height == 1 && g.stride.width == 1 &&
         g.padding.height == 0 && g.padding.width == 0;
}

void convolve_pointwise(const Convolution& conv) {
  const ConvolutionGeometry& g = conv.geometry;
  GemmEpilogue epilogue;
  epilogue.activation = conv.activation;
  gemm(group_products(conv, true), g.group_out_channels(), g.out_plane(), g.group_channels(), RightLayout::KByN,
       epilogue);
}

typedef float Float4 __attribute__((vector_size(16)));

// target[i] = source[i] for i < count, four at a time: the runs are short (at most a
// panel's width), where a call to memmove costs more than the copy. The empty asm keeps the
// compiler from turning the loop back into such a call.
inline void copy_short(const float* source, float* target, int64_t count) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    Float4 value;
    std::memcpy(&value, source + i, sizeof(value));
    std::memcpy(target + i, &value, sizeof(value));
    __asm__("" : "+r"(i));
  }
  if (i + 2 <= count) target[i] = source[i], target[i + 1] = source[i + 1], i += 2;
  if (i < count) target[i] = source[i];
}

inline void zero_short(float* target, int64_t count) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    std::memcpy(target + i, &kZeros4, sizeof(kZeros4));
    __asm__("" : "+r"(i));
  }
  if (i + 2 <= count) target[i] = 0.0f, target[i + 1] = 0.0f, i += 2;
  if (i < count) target[i] = 0.0f;
}

// Im2col values of tap (kh, kw) of one input channel for outputs (oh, ow .. ow + count) of
// one output row: the input the tap reads, 0 where it reads the padding. `valid` is the
// tap's range of in-bounds ow (valid_outputs).
inline void im2col_run(const ConvolutionGeometry& g, const float* channel, int64_t kh, int64_t kw, OutputRange valid,
                       int64_t oh, int64_t ow, int64_t count, float* __restrict target) {
  const int64_t ih = oh * g.stride.height - g.padding.height + kh * g.dilation.height;
  const int64_t end = ow + count;
  const bool row_inside = ih >= 0 && ih < g.height;
  const int64_t first = row_inside ? std::clamp(valid.begin, ow, end) : end;
  const int64_t last = row_inside ? std::clamp(valid.end, first, end) : end;
  zero_short(target, first - ow);
  if (first < last) {  // inputs (ih, o·stride + offset) for o in [first, last)
    const float* inputs = channel + ih * g.width + first * g.stride.width + (kw * g.dilation.width - g.padding.width);
    float* inside = target + (first - ow);
    if (g.stride.width == 1) {
      copy_short(inputs, inside, last - first);
    } else {
      for (int64_t o = 0; o < last - first; ++o) inside[o] = inputs[o * g.stride.width];
    }
  }
  zero_short(target + (last - ow), end - last);
}

// A piece of a packed block: outputs (oh, ow .. ow + count) of one output row that fall in
// one panel, and where they go in a packed row.
struct PackedRun {
  int64_t oh, ow, count, offset;
};

// The block's columns [column, column + columns) cut at output rows and panel edges.
std::vector<PackedRun> packed_runs(const ConvolutionGeometry& g, int64_t column, int64_t columns, int64_t width,
                                   int64_t depth) {
  std::vector<PackedRun> runs;
  int64_t oh = column / g.out_width, ow = column % g.out_width;
  for (int64_t jj = 0; jj < columns;) {
    const int64_t count = std::min({g.out_width - ow, columns - jj, width - jj % width});
    runs.push_back({oh, ow, count, jj / width * width * depth + jj % width});
    jj += count;
    ow += count;
    if (ow == g.out_width) ow = 0, ++oh;
  }
  return runs;
}

// RightPacker::pack for the im2col matrix of product `entry` (image entry / groups, group
// entry % groups): row p is the tap (c, kh, kw) = (p / (KH·KW), p / KW % KH, p % KW),
// column j the output (j / OW, j % OW).
void pack_im2col(const void* context, size_t entry, int64_t depth_begin, int64_t depth, int64_t column, int64_t columns,
                 int64_t width, float* packed) {
  const Convolution& conv = *static_cast<const Convolution*>(context);
  const ConvolutionGeometry& g = conv.geometry;
  const int64_t n = static_cast<int64_t>(entry) / g.groups, group = static_cast<int64_t>(entry) % g.groups;
  const int64_t plane = g.height * g.width;
  const float* image = conv.x + (n * g.channels + group * g.group_channels()) * plane;
  const int64_t taps = g.kernel_height * g.kernel_width;
  const int64_t padded_columns = (columns + width - 1) / width * width;
  const std::vector<PackedRun> runs = packed_runs(g, column, columns, width, depth);
  for (int64_t r = 0; r < depth; ++r) {
    const int64_t p = depth_begin + r;
    const int64_t kh = p % taps / g.kernel_width, kw = p % g.kernel_width;
    const OutputRange valid =
        valid_outputs(kw * g.dilation.width - g.padding.width, g.stride.width, g.width, g.out_width);
    const float* channel = image + p / taps * plane;
    float* row = packed + r * width;
    for (const PackedRun& run : runs)
      im2col_run(g, channel, kh, kw, valid, run.oh, run.ow, run.count, row + run.offset);
    if (padded_columns > columns) {
      float* tail = row + columns / width * width * depth + columns % width;
      std::fill(tail, tail + (padded_columns - columns), 0.0f);
    }
  }
}

// The input with its zero padding written out: [N·C, H + 2·ph, W + 2·pw]. With it the
// packer's runs are plain copies (or strided copies), no bounds to check. Made when the
// padding is at most about the input's size, so it stays within a few times x. Held in a
// Tensor: its storage comes from the runtime's cache of large buffers, already mapped.
struct PaddedInput {
  const ConvolutionGeometry& g;
  int64_t height, width;  // of one padded plane
  Tensor storage;
  float* data;

  static bool fits(const ConvolutionGeometry& g) {
    return g.padding.height <= g.height + 32 && g.padding.width <= g.width + 32;
  }

  PaddedInput(const ConvolutionGeometry& geometry, const float* x)
      : g(geometry),
        height(g.height + 2 * g.padding.height),
        width(g.width + 2 * g.padding.width),
        storage(DType::Float32, {g.batch * g.channels, height, width}),
        data(storage.data_as<float>()) {
    const int64_t planes = g.batch * g.channels;
    parallel_for(0, planes, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, height * width)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t plane = begin; plane < end; ++plane) {
                     for (int64_t h = 0; h < g.height; ++h) {
                       const float* source = x + (plane * g.height + h) * g.width;
                       float* target = data + (plane * height + h + g.padding.height) * width + g.padding.width;
                       std::copy(source, source + g.width, target);
                     }
                   }
                 });
  }
};

// The inputs of one packed row from the padded input, stride 1: run i copies runs[i].count
// floats from tap + sources[i] to row + runs[i].offset. A run lies within one panel, so it
// is at most 16 floats: one masked copy with AVX-512, two with AVX2.
using RowCopy = void (*)(const float* tap, const int64_t* sources, const PackedRun* runs, size_t count, float* row);

void copy_row_portable(const float* tap, const int64_t* sources, const PackedRun* runs, size_t count, float* row) {
  for (size_t i = 0; i < count; ++i) copy_short(tap + sources[i], row + runs[i].offset, runs[i].count);
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void copy_row_avx512(const float* tap, const int64_t* sources, const PackedRun* runs,
                                                        size_t count, float* row) {
  for (size_t i = 0; i < count; ++i) {
    const __mmask16 mask = static_cast<__mmask16>((1u << runs[i].count) - 1);
    _mm512_mask_storeu_ps(row + runs[i].offset, mask, _mm512_maskz_loadu_ps(mask, tap + sources[i]));
  }
}

__attribute__((target("avx2"))) void copy_row_avx2(const float* tap, const int64_t* sources, const PackedRun* runs,
                                                   size_t count, float* row) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (size_t i = 0; i < count; ++i) {
    const int32_t length = static_cast<int32_t>(runs[i].count);
    const float* source = tap + sources[i];
    float* target = row + runs[i].offset;
    const __m256i low = _mm256_cmpgt_epi32(_mm256_set1_epi32(length), lanes);
    _mm256_maskstore_ps(target, low, _mm256_maskload_ps(source, low));
    if (length > 8) {
      const __m256i high = _mm256_cmpgt_epi32(_mm256_set1_epi32(length - 8), lanes);
      _mm256_maskstore_ps(target + 8, high, _mm256_maskload_ps(source + 8, high));
    }
  }
}
#endif

RowCopy select_row_copy(int64_t width) {
  switch (width <= 16 ? kernel_isa() : Isa::Portable) {
#if defined(__x86_64__)
    case Isa::Avx512: return copy_row_avx512;
    case Isa::Avx2: return copy_row_avx2;
#endif
    default: return copy_row_portable;
  }
}

// RightPacker::pack from the padded input: tap (c, kh, kw) of output (oh, ow) reads padded
// (oh·sh + kh·dh, ow·sw + kw·dw).
void pack_padded_im2col(const void* context, size_t entry, int64_t depth_begin, int64_t depth, int64_t column,
                        int64_t columns, int64_t width, float* packed) {
  const auto& [conv, padded] = *static_cast<const std::pair<const Convolution*, const PaddedInput*>*>(context);
  const ConvolutionGeometry& g = conv->geometry;
  const int64_t n = static_cast<int64_t>(entry) / g.groups, group = static_cast<int64_t>(entry) % g.groups;
  const int64_t plane = padded->height * padded->width, taps = g.kernel_height * g.kernel_width;
  const float* image = padded->data + (n * g.channels + group * g.group_channels()) * plane;
  const int64_t padded_columns = (columns + width - 1) / width * width;
  const std::vector<PackedRun> runs = packed_runs(g, column, columns, width, depth);
  std::vector<int64_t> sources;  // of each run, from its tap's first input
  for (const PackedRun& run : runs)
    sources.push_back(run.oh * g.stride.height * padded->width + run.ow * g.stride.width);
  const RowCopy copy_row = select_row_copy(width);
  for (int64_t r = 0; r < depth; ++r) {
    const int64_t p = depth_begin + r;
    const int64_t kh = p % taps / g.kernel_width, kw = p % g.kernel_width;
    const float* tap = image + p / taps * plane + kh * g.dilation.height * padded->width + kw * g.dilation.width;
    float* row = packed + r * width;
    if (g.stride.width == 1) {
      copy_row(tap, sources.data(), runs.data(), runs.size(), row);
    } else {
      for (size_t i = 0; i < runs.size(); ++i) {
        for (int64_t o = 0; o < runs[i].count; ++o) row[runs[i].offset + o] = tap[sources[i] + o * g.stride.width];
      }
    }
    if (padded_columns > columns)
      zero_short(row + columns / width * width * depth + columns % width, padded_columns - columns);
  }
}

void convolve_im2col(const Convolution& conv) {
  const ConvolutionGeometry& g = conv.geometry;
  GemmEpilogue epilogue;
  epilogue.activation = conv.activation;
  if (PaddedInput::fits(g)) {
    const PaddedInput padded(g, conv.x);
    const std::pair<const Convolution*, const PaddedInput*> context{&conv, &padded};
    const RightPacker packer{pack_padded_im2col, &context};
    return gemm_packed_right(group_products(conv, false), g.group_out_channels(), g.out_plane(), g.patch(), packer,
                             epilogue);
  }
  const RightPacker packer{pack_im2col, &conv};
  gemm_packed_right(group_products(conv, false), g.group_out_channels(), g.out_plane(), g.patch(), packer, epilogue);
}

// ----------------------------------------------------------------- depthwise

// One output row of a depthwise convolution: out[ow] = Σ_t taps[t][ow]·weights[t] from +0,
// t in (kh, kw) order, then + bias (the activation follows per plane). taps[t] + ow is the input (or a zero of the
// padding) that output ow's tap t reads. Each output's terms stay in registers until the
// sum is complete; every lane does the same rounded multiplies and adds as the scalar loop.
struct DepthwiseRow {
  const float* const* taps;
  const float* weights;
  int64_t tap_count;
  int64_t count;
  const float* bias;  // one value, or null
  float* out;
};

inline __attribute__((always_inline)) float finish_output(const DepthwiseRow& row, float sum) {
  return row.bias ? sum + *row.bias : sum;
}

// Outputs [first, count) in four lanes, the last few one by one (inlined into the AVX
// versions' tails, as deinterleave_portable).
inline __attribute__((always_inline)) void depthwise_row_portable(const DepthwiseRow& row, int64_t first) {
  int64_t ow = first;
  for (; ow + 4 <= row.count; ow += 4) {
    Float4 sum{};
    for (int64_t t = 0; t < row.tap_count; ++t) {
      Float4 value;
      std::memcpy(&value, row.taps[t] + ow, sizeof(value));
      sum = sum + value * (Float4{} + row.weights[t]);
    }
    if (row.bias) sum = sum + *row.bias;
    std::memcpy(row.out + ow, &sum, sizeof(sum));
  }
  for (; ow < row.count; ++ow) {
    float sum = 0.0f;
    for (int64_t t = 0; t < row.tap_count; ++t) sum = sum + row.taps[t][ow] * row.weights[t];
    row.out[ow] = finish_output(row, sum);
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) void depthwise_row_avx2(const DepthwiseRow& row, int64_t first) {
  int64_t ow = first;
  for (; ow + 8 <= row.count; ow += 8) {
    __m256 sum = _mm256_setzero_ps();
    for (int64_t t = 0; t < row.tap_count; ++t) {
      sum = _mm256_add_ps(sum, _mm256_mul_ps(_mm256_loadu_ps(row.taps[t] + ow), _mm256_set1_ps(row.weights[t])));
    }
    if (row.bias) sum = _mm256_add_ps(sum, _mm256_set1_ps(*row.bias));
    _mm256_storeu_ps(row.out + ow, sum);
  }
  depthwise_row_portable(row, ow);
}

__attribute__((target("avx512f"))) void depthwise_row_avx512(const DepthwiseRow& row, int64_t first) {
  int64_t ow = first;
  for (; ow + 16 <= row.count; ow += 16) {
    __m512 sum = _mm512_setzero_ps();
    for (int64_t t = 0; t < row.tap_count; ++t) {
      sum = _mm512_add_ps(sum, _mm512_mul_ps(_mm512_loadu_ps(row.taps[t] + ow), _mm512_set1_ps(row.weights[t])));
    }
    if (row.bias) sum = _mm512_add_ps(sum, _mm512_set1_ps(*row.bias));
    _mm512_storeu_ps(row.out + ow, sum);
  }
  depthwise_row_avx2(row, ow);
}
#endif

using DepthwiseRowKernel = void (*)(const DepthwiseRow&, int64_t);

DepthwiseRowKernel select_depthwise_row() {
  switch (kernel_isa()) {
#if defined(__x86_64__)
    case Isa::Avx512: return depthwise_row_avx512;
    case Isa::Avx2: return depthwise_row_avx2;
#endif
    default: return depthwise_row_portable;
  }
}

// Where the taps of an output row come from. When the padding is at most about the width,
// each input channel is copied once into `plane`: its rows zero-padded to Wp = W + 2·pw
// and split into `stride` phases (phase q holds padded[q], padded[q + s], ...), so tap
// (kh, kw) of output ow reads phase (kw·d) % s at ow + (kw·d) / s: contiguous for every
// stride and dilation. Only phases below Wp hold anything (a tap's first input kw·d is
// below Wp), so at most min(s, Wp) are stored. A last row of zeros stands for the padding
// rows. Otherwise (padding far wider than the input) each tap's inputs are gathered into a
// line of OW values.
struct DepthwiseSource {
  const ConvolutionGeometry& g;
  bool padded_plane;
  int64_t phases;        // min(stride, Wp)
  int64_t phase_length;  // ceil(Wp / stride)
  int64_t row_length;    // phases · phase_length
  std::vector<float> plane;
  std::vector<const float*> taps;
  std::vector<int64_t> column_offsets;  // of tap kw within a padded row
  int64_t channel = -1;                 // the (image · C + c) copied into plane

  explicit DepthwiseSource(const ConvolutionGeometry& geometry)
      : g(geometry), padded_plane(g.padding.width <= g.width + 32) {
    const int64_t taps_count = g.kernel_height * g.kernel_width;
    taps.resize(static_cast<size_t>(taps_count));
    const int64_t padded_width = g.width + 2 * g.padding.width;
    phases = std::min(g.stride.width, padded_width);
    phase_length = (padded_width + g.stride.width - 1) / g.stride.width;
    row_length = phase_length * phases;
    plane.assign(static_cast<size_t>(padded_plane ? (g.height + 1) * row_length : taps_count * g.out_width), 0.0f);
    for (int64_t kw = 0; kw < g.kernel_width && padded_plane; ++kw) {
      const int64_t shift = kw * g.dilation.width;
      column_offsets.push_back(shift % g.stride.width * phase_length + shift / g.stride.width);
    }
  }

  // Copies input channel `index` into the padded rows (their padding stays zero).
  void load_channel(const float* x, int64_t index) {
    if (!padded_plane || index == channel) return;
    channel = index;
    const float* source = x + index * g.height * g.width;
    const int64_t stride = g.stride.width;
    for (int64_t h = 0; h < g.height; ++h) {
      const float* input = source + h * g.width;
      float* row = plane.data() + h * row_length;
      if (stride == 1) {
        std::copy(input, input + g.width, row + g.padding.width);
        continue;
      }
      for (int64_t q = 0; q < phases; ++q) {  // phase q: padded positions m·stride + q
        const OutputRange inside = valid_outputs(q - g.padding.width, stride, g.width, phase_length);
        float* phase = row + q * phase_length;
        for (int64_t m = inside.begin; m < inside.end; ++m) phase[m] = input[m * stride + q - g.padding.width];
      }
    }
  }

  // Fills taps for output row oh of input channel `channel_data`.
  void point_taps(const float* channel_data, int64_t oh) {
    for (int64_t kh = 0; kh < g.kernel_height; ++kh) {
      const int64_t ih = oh * g.stride.height - g.padding.height + kh * g.dilation.height;
      for (int64_t kw = 0; kw < g.kernel_width; ++kw) {
        const size_t t = static_cast<size_t>(kh * g.kernel_width + kw);
        if (!padded_plane) {
          float* line = plane.data() + static_cast<int64_t>(t) * g.out_width;
          const int64_t offset = kw * g.dilation.width - g.padding.width;
          im2col_run(g, channel_data, kh, kw, valid_outputs(offset, g.stride.width, g.width, g.out_width), oh, 0,
                     g.out_width, line);
          taps[t] = line;
          continue;
        }
        const bool inside = ih >= 0 && ih < g.height;
        taps[t] = plane.data() + (inside ? ih : g.height) * row_length + column_offsets[static_cast<size_t>(kw)];
      }
    }
  }
};

// even[m] = input[2m] for m < ceil(count / 2), odd[m] = input[2m + 1] for m < count / 2:
// a stride-2 row split into its two column phases. Inlined into the AVX2 and AVX-512
// versions' tails: a call from them into baseline (SSE) code costs more than the row (the
// processor's switch between AVX and SSE register states made the column split 25 times
// slower on this page's machine).
inline __attribute__((always_inline)) void deinterleave_portable(const float* input, int64_t count, float* even,
                                                                 float* odd) {
  int64_t m = 0;
  for (; 2 * m + 1 < count; ++m) even[m] = input[2 * m], odd[m] = input[2 * m + 1];
  if (2 * m < count) even[m] = input[2 * m];
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) void deinterleave_avx512(const float* input, int64_t count, float* even,
                                                            float* odd) {
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  int64_t m = 0;
  for (; 2 * m + 32 <= count; m += 16) {
    const __m512 low = _mm512_loadu_ps(input + 2 * m), high = _mm512_loadu_ps(input + 2 * m + 16);
    _mm512_storeu_ps(even + m, _mm512_permutex2var_ps(low, evens, high));
    _mm512_storeu_ps(odd + m, _mm512_permutex2var_ps(low, odds, high));
  }
  deinterleave_portable(input + 2 * m, count - 2 * m, even + m, odd + m);
}

__attribute__((target("avx2"))) void deinterleave_avx2(const float* input, int64_t count, float* even, float* odd) {
  int64_t m = 0;
  for (; 2 * m + 16 <= count; m += 8) {
    const __m256 low = _mm256_loadu_ps(input + 2 * m), high = _mm256_loadu_ps(input + 2 * m + 8);
    // (l0 l2 h0 h2 | l4 l6 h4 h6), then its 64-bit pairs in the order 0, 2, 1, 3.
    const __m256d evens = _mm256_castps_pd(_mm256_shuffle_ps(low, high, 0x88));
    const __m256d odds = _mm256_castps_pd(_mm256_shuffle_ps(low, high, 0xdd));
    _mm256_storeu_ps(even + m, _mm256_castpd_ps(_mm256_permute4x64_pd(evens, 0xd8)));
    _mm256_storeu_ps(odd + m, _mm256_castpd_ps(_mm256_permute4x64_pd(odds, 0xd8)));
  }
  deinterleave_portable(input + 2 * m, count - 2 * m, even + m, odd + m);
}
#endif

void deinterleave_row(const float* input, int64_t count, float* even, float* odd) {
  switch (kernel_isa()) {
#if defined(__x86_64__)
    case Isa::Avx512: return deinterleave_avx512(input, count, even, odd);
    case Isa::Avx2: return deinterleave_avx2(input, count, even, odd);
#endif
    default: return deinterleave_portable(input, count, even, odd);
  }
}

// sums[p] = Σ_t plane[offsets[t] + p]·weights[t] from +0, t in order, then + *bias, for p
// below `count` rounded up to 16 (sums and plane hold that many): four vectors of outputs
// side by side, each tap one load, one multiply and one add per vector.
void depthwise_flat_sums(const float* plane, const int64_t* offsets, const float* weights, int64_t taps,
                         const float* bias, int64_t count, float* sums) {
  simd::dispatch([=](auto width) {
    using V = typename decltype(width)::Float;
    constexpr int64_t kLanes = decltype(width)::lanes;
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
      if (bias) {
        const V b = simd::splat<V>(*bias);
        s0 = s0 + b, s1 = s1 + b, s2 = s2 + b, s3 = s3 + b;
      }
      simd::store(sums + p, s0);
      simd::store(sums + p + kLanes, s1);
      simd::store(sums + p + 2 * kLanes, s2);
      simd::store(sums + p + 3 * kLanes, s3);
    }
    for (; p < count; p += kLanes) {
      V s{};
      for (int64_t t = 0; t < taps; ++t) s = s + simd::load<V>(plane + offsets[t] + p) * simd::splat<V>(weights[t]);
      if (bias) s = s + simd::splat<V>(*bias);
      simd::store(sums + p, s);
    }
  });
}

// The direct depthwise kernel ("flat"): each input channel is copied once into a zero-padded
// copy split into stride phases along both dimensions, phase (qh, qw) holding padded[qh + sh·i]
// [qw + sw·j] at i·L + j with pitch L = ceil(Wp / sw). Tap (kh, kw) of output (oh, ow) then
// reads phase ((kh·dh) % sh, (kw·dw) % sw) at (oh + kh·dh / sh)·L + ow + kw·dw / sw: with the
// outputs numbered p = oh·L + ow, every tap is one contiguous run at a fixed offset, whatever
// the stride, dilation and width. The sums run over p in vectors (16, 8 or 4 lanes, four
// vectors side by side), so a narrow plane (7×7: p < 61) fills its lanes across rows instead
// of leaving a scalar tail per row; the L - OW positions past each row's end are computed and
// dropped. Each output's taps are added in (kh, kw) order from +0 as in every other path.
struct DepthwisePlanes : DepthwisePhases {
  // Whether the padded copy stays within a few times the input (else the row path below).
  static bool fits(const ConvolutionGeometry& g) {
    return g.padding.height <= g.height + 32 && g.padding.width <= g.width + 32;
  }

  explicit DepthwisePlanes(const ConvolutionGeometry& geometry) : DepthwisePhases(geometry) {}

  // Copies input channel `index` into the phases (their padding stays zero).
  void load_channel(const float* x, int64_t index) {
    if (index == channel) return;
    channel = index;
    split(x + index * g.height * g.width, deinterleave_row);
  }

  // One output plane [OH, OW] from the loaded channel: its weights [KH, KW] and bias (or null).
  void compute(const float* weights, const float* bias, float* out) {
    depthwise_flat_sums(plane.data(), offsets.data(), weights, static_cast<int64_t>(offsets.size()), bias, positions,
                        sums.data());
    copy_out(out);
  }
};

// Output planes [begin, end) (plane n·O + o) of a convolution with one input channel per
// group: output channel o reads input channel o / (O / groups).
void depthwise_planes(const Convolution& conv, int64_t begin, int64_t end) {
  const ConvolutionGeometry& g = conv.geometry;
  if (DepthwisePlanes::fits(g)) {
    DepthwisePlanes planes(g);
    for (int64_t index = begin; index < end; ++index) {
      const int64_t n = index / g.out_channels, o = index % g.out_channels;
      planes.load_channel(conv.x, n * g.channels + o / g.group_out_channels());
      float* out = conv.out + index * g.out_plane();
      planes.compute(conv.weight + o * g.kernel_height * g.kernel_width, conv.bias ? conv.bias + o : nullptr, out);
      apply_activation(conv.activation, out, g.out_plane());  // the plane is still in cache
    }
    return;
  }
  const DepthwiseRowKernel kernel = select_depthwise_row();
  DepthwiseSource source(g);
  for (int64_t index = begin; index < end; ++index) {
    const int64_t n = index / g.out_channels, o = index % g.out_channels;
    const int64_t channel = n * g.channels + o / g.group_out_channels();
    source.load_channel(conv.x, channel);
    DepthwiseRow row{source.taps.data(),
                     conv.weight + o * g.kernel_height * g.kernel_width,
                     g.kernel_height * g.kernel_width,
                     g.out_width,
                     conv.bias ? conv.bias + o : nullptr,
                     nullptr};
    for (int64_t oh = 0; oh < g.out_height; ++oh) {
      source.point_taps(conv.x + channel * g.height * g.width, oh);
      row.out = conv.out + index * g.out_plane() + oh * g.out_width;
      kernel(row, 0);
    }
    apply_activation(conv.activation, conv.out + index * g.out_plane(), g.out_plane());
  }
}

void convolve_depthwise(const Convolution& conv) {
  const ConvolutionGeometry& g = conv.geometry;
  const int64_t work = std::max<int64_t>(1, g.out_plane() * g.kernel_height * g.kernel_width);
  parallel_for(0, g.batch * g.out_channels, std::max<int64_t>(1, kParallelGrain / work),
               [&](int64_t begin, int64_t end) { depthwise_planes(conv, begin, end); });
}

// ----------------------------------------------------------------- the operator

Status check_bias(const KernelContext& context, const Tensor* bias, int64_t out_channels) {
  if (bias == nullptr) return Status::success();
  EDGERT_RETURN_IF_ERROR(check_dtype(context, *bias, DType::Float32, "bias"));
  if (bias->dim() != 1 || bias->shape()[0] != out_channels) {
    return invalid(context, "bias " + shape_text(bias->shape()) + " must be [" + std::to_string(out_channels) + "]");
  }
  return Status::success();
}

// Inputs: x [N, C, H, W], weight [O, C/groups, KH, KW], bias [O] (optional). Attributes:
// stride, padding, dilation (2 ints each), groups, activation (activation.hpp).
// What prepare makes of a constant weight: gemm's left panels and, for a pointwise weight
// (groups 1), linear's panels when a run first meets a small plane (small_plane_linear).
struct PreparedWeight {
  PackedPanels left;
  std::shared_ptr<const PackedPanels> pointwise(const Tensor& weight) const {
    std::call_once(once_, [&] { linear_ = prepare_linear_weight(weight); });
    return linear_;
  }

 private:
  mutable std::once_flag once_;
  mutable std::shared_ptr<const PackedPanels> linear_;
};

// The weight's packed panels when prepare made them for this geometry and this process's
// kernels.
const PackedPanels* usable_weight(const KernelContext& context, const ConvolutionGeometry& g) {
  const auto* prepared = static_cast<const PreparedWeight*>(context.prepared);
  if (prepared == nullptr) return nullptr;
  const PackedPanels* packed = &prepared->left;
  if (!fits_left_kernel(*packed) || packed->matrices != g.groups) return nullptr;
  return packed->extent == g.group_out_channels() && packed->depth == g.patch() ? packed : nullptr;
}

// Pointwise convolutions (groups 1) over planes of at most this many outputs: the last
// stages of a small image, or a 1×1 feature map.
constexpr int64_t kSmallPlane = 4;

// out[n] = W · x[n] + bias as linear: out[n]ᵀ [HW, O] = x[n]ᵀ [HW, C] · Wᵀ + bias, the
// images' rows stacked. gemm's panels run along the plane, 16 outputs wide, mostly padding
// for a plane of 4; linear's run along the output channels, and its rows of x are read in
// place (few rows) or packed once. Each output is the same sum over c in order from +0,
// then + bias, then the activation: the same bytes as the other paths.
Status small_plane_linear(const KernelContext& context, const ConvolutionGeometry& g, const Tensor& x, const Tensor& w,
                          const Tensor* bias, const FusedActivation& activation, Tensor& out) {
  const int64_t plane = g.out_plane(), channels = g.channels, outputs = g.out_channels;
  Tensor rows = Tensor::uninitialized(DType::Float32, {g.batch * plane, channels});
  const float* xd = x.data_as<float>();
  float* rd = rows.data_as<float>();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t c = 0; c < channels; ++c) {
      for (int64_t i = 0; i < plane; ++i) rd[(n * plane + i) * channels + c] = xd[(n * channels + c) * plane + i];
    }
  }
  const Tensor weight = w.reshaped({outputs, channels});
  const auto* prepared = static_cast<const PreparedWeight*>(context.prepared);
  const std::shared_ptr<const PackedPanels> panels = prepared ? prepared->pointwise(weight) : nullptr;
  Tensor product;
  EDGERT_RETURN_IF_ERROR(linear(rows, weight, bias, activation, product, panels.get()));
  const float* pd = product.data_as<float>();
  float* od = out.data_as<float>();
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t i = 0; i < plane; ++i) {
      for (int64_t o = 0; o < outputs; ++o) od[(n * outputs + o) * plane + i] = pd[(n * plane + i) * outputs + o];
    }
  }
  return Status::success();
}

Status conv2d_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 3));
  const Tensor& input = *context.inputs[0];
  const Tensor& weight = *context.inputs[1];
  const Tensor* bias = optional_input(context, 2);
  EDGERT_RETURN_IF_ERROR(check_dtype(context, input, DType::Float32, "input"));
  EDGERT_RETURN_IF_ERROR(check_dtype(context, weight, DType::Float32, "weight"));
  ConvolutionGeometry geometry;
  EDGERT_RETURN_IF_ERROR(convolution_geometry(context, input.shape(), weight.shape(), geometry));
  EDGERT_RETURN_IF_ERROR(check_bias(context, bias, geometry.out_channels));
  FusedActivation activation;
  EDGERT_RETURN_IF_ERROR(read_activation(context, activation));
  Tensor out = Tensor::uninitialized(DType::Float32, geometry.output_shape());
  if (out.numel() > 0) {
    const Tensor x = input.contiguous(), w = weight.contiguous();
    const Tensor b = bias ? bias->contiguous() : Tensor();
    const Convolution conv{geometry,
                           x.data_as<float>(),
                           w.data_as<float>(),
                           bias ? b.data_as<float>() : nullptr,
                           out.data_as<float>(),
                           activation,
                           usable_weight(context, geometry)};
    if (geometry.group_channels() == 1) {
      convolve_depthwise(conv);
    } else if (is_pointwise(geometry) && geometry.groups == 1 && geometry.out_plane() <= kSmallPlane) {
      EDGERT_RETURN_IF_ERROR(small_plane_linear(context, geometry, x, w, bias ? &b : nullptr, activation, out));
    } else if (is_pointwise(geometry)) {
      convolve_pointwise(conv);
    } else {
      convolve_im2col(conv);
    }
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// A constant weight [O, C/groups, KH, KW] of a convolution that runs on gemm (not the
// depthwise kernel) is packed once into left panels, one matrix [O/groups, C/groups·KH·KW]
// per group. Anything unusable is left to the kernel, which reports it.
Status prepare_conv2d(const PrepareContext& context, std::shared_ptr<const void>& state) {
  const Tensor* weight = context.constants.size() > 1 ? context.constants[1] : nullptr;
  if (weight == nullptr || weight->dtype() != DType::Float32 || weight->dim() != 4) return Status::success();
  const int64_t groups = context.attributes ? context.attributes->get_int("groups", 1) : 1;
  const std::vector<int64_t>& shape = weight->shape();
  if (groups < 1 || shape[0] % groups != 0 || shape[1] == 1) return Status::success();
  const Tensor w = weight->contiguous();
  auto prepared = std::make_shared<PreparedWeight>();
  prepared->left = pack_left_panels(w.data_as<float>(), groups, shape[0] / groups, shape[1] * shape[2] * shape[3]);
  state = std::move(prepared);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_PREPARED_OPERATOR("edgert::conv2d", conv2d_kernel, prepare_conv2d);
EDGERT_OPERATOR_ATTRIBUTES("edgert::conv2d", {{"stride", AttributeKind::Ints},
                                              {"padding", AttributeKind::Ints},
                                              {"dilation", AttributeKind::Ints},
                                              {"groups", AttributeKind::Int},
                                              {"activation", AttributeKind::String},
                                              {"activation_min", AttributeKind::Float},
                                              {"activation_max", AttributeKind::Float}});

}  // namespace edgert::kernels
