// max_pool2d, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d and upsample_nearest2d
// on [N, C, H, W] (docs/operators.md), with torch's semantics: its output sizes (the
// ceil_mode rule), its divisors, its NaN propagation and its float index arithmetic for
// nearest (and nearest-exact) upsampling.
//
// The window kernels run output row by output row: the row's results start at the
// identity (-inf or +0) and every in-bounds tap (kh, kw), in row order, is folded into
// all the outputs it reaches at once. Each output therefore sees its window's elements in
// row order, the order torch uses.
#include <cmath>
#include <limits>

#include "common.hpp"
#include "edgert/threadpool.h"
#include "isa.hpp"
#include "sliding_window.hpp"
#include "vector_math.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace edgert::kernels {
namespace {

// A window operator's input planes (N·C of H × W) and output size.
struct PoolPlanes {
  int64_t planes, height, width, out_height, out_width;
};

Status check_planes_input(const KernelContext& context, const Tensor& input) {
  EDGERT_RETURN_IF_ERROR(check_dtype(context, input, DType::Float32, "input"));
  if (input.dim() != 4) return invalid(context, "input " + shape_text(input.shape()) + " must be [N, C, H, W]");
  return Status::success();
}

Status allocate_output(const KernelContext& context, const Tensor& input, int64_t out_height, int64_t out_width,
                       Tensor& out) {
  const std::vector<int64_t> shape{input.shape()[0], input.shape()[1], out_height, out_width};
  int64_t count = 0;
  if (!checked_element_count(shape, sizeof(float), &count)) {
    return invalid(context, "the output " + shape_text(shape) + " is too large");
  }
  out = Tensor::uninitialized(DType::Float32, shape);
  return Status::success();
}

// Runs fn(plane, oh) for every output row, split across the pool.
template <class RowFunction>
void for_each_output_row(const PoolPlanes& p, int64_t work_per_row, RowFunction&& fn) {
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, work_per_row));
  parallel_for(0, p.planes * p.out_height, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) fn(row / p.out_height, row % p.out_height);
  });
}

// ----------------------------------------------------------------- max and average pooling

struct Window {
  Pair kernel, stride, padding, dilation;
  bool ceil_mode;
};

// kernel (required), stride (default: kernel), padding, dilation (when allowed) and
// ceil_mode; torch's rule that padding is at most half the kernel.
Status read_window(const KernelContext& context, bool with_dilation, Window& window) {
  if (context.attributes == nullptr || !context.attributes->has("kernel")) {
    return invalid(context, "attribute kernel (2 ints) is required");
  }
  EDGERT_RETURN_IF_ERROR(read_pair(context, "kernel", {1, 1}, 1, window.kernel));
  EDGERT_RETURN_IF_ERROR(read_pair(context, "stride", window.kernel, 1, window.stride));
  EDGERT_RETURN_IF_ERROR(read_pair(context, "padding", {0, 0}, 0, window.padding));
  window.dilation = {1, 1};
  if (with_dilation)
    EDGERT_RETURN_IF_ERROR(read_pair(context, "dilation", {1, 1}, 1, window.dilation));
  else if (context.attributes->has("dilation"))
    return invalid(context, "attribute dilation is not supported");
  window.ceil_mode = context.attributes->get_int("ceil_mode", 0) != 0;
  if (window.padding.height > window.kernel.height / 2 || window.padding.width > window.kernel.width / 2) {
    return invalid(context, "padding must be at most half the kernel size");
  }
  return Status::success();
}

Status window_planes(const KernelContext& context, const Tensor& input, const Window& w, PoolPlanes& p) {
  p.planes = input.shape()[0] * input.shape()[1];
  p.height = input.shape()[2];
  p.width = input.shape()[3];
  if (!output_extent(p.height, w.kernel.height, w.stride.height, w.padding.height, w.dilation.height, w.ceil_mode,
                     p.out_height) ||
      !output_extent(p.width, w.kernel.width, w.stride.width, w.padding.width, w.dilation.width, w.ceil_mode,
                     p.out_width) ||
      p.out_height < 1 || p.out_width < 1) {
    return invalid(context, "the window does not fit the input " + shape_text(input.shape()) +
                                " (output size below 1) or the sizes are too large");
  }
  return Status::success();
}

// How a window's elements are combined. Max is torch's: a later element replaces the
// maximum when it is greater or NaN, so the first NaN of a window is its result (a window
// with no element gives -inf). Add is a float32 sum.
enum class Fold { Max, Add };

template <Fold kind>
float fold_value(float result, float value) {
  if constexpr (kind == Fold::Max)
    return (value > result || value != value) ? value : result;
  else
    return result + value;
}

// results[i] = fold(results[i], inputs[i * step]) for i < count, one element at a time.
template <Fold kind>
void fold_line_scalar(const float* inputs, int64_t step, float* results, int64_t count) {
  for (int64_t i = 0; i < count; ++i) results[i] = fold_value<kind>(results[i], inputs[i * step]);
}

typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));

// The same fold four lanes at a time, without branches (the comparisons of max pooling are
// unpredictable). Each lane computes exactly what the scalar fold computes.
template <Fold kind>
inline __attribute__((always_inline)) void fold_line_portable(const float* inputs, int64_t step, float* results,
                                                              int64_t count) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    Float4 result, value;
    std::memcpy(&result, results + i, sizeof(result));
    if (step == 1)
      std::memcpy(&value, inputs + i, sizeof(value));
    else
      value = Float4{inputs[i * step], inputs[(i + 1) * step], inputs[(i + 2) * step], inputs[(i + 3) * step]};
    if constexpr (kind == Fold::Max) {
      const Int4 take = (value > result) | (value != value);
      result = (Float4)((take & (Int4)value) | (~take & (Int4)result));
    } else {
      result = result + value;
    }
    std::memcpy(results + i, &result, sizeof(result));
  }
  fold_line_scalar<kind>(inputs + i * step, step, results + i, count - i);
}

#if defined(__x86_64__)
// Eight inputs inputs[0], inputs[step], ...: loaded directly (step 1), deinterleaved from
// sixteen neighbours (step 2; the caller keeps inputs[15] inside the row), else gathered.
__attribute__((target("avx2"))) __m256 load_strided8(const float* inputs, int64_t step) {
  if (step == 1) return _mm256_loadu_ps(inputs);
  if (step == 2) {
    const __m256 evens = _mm256_shuffle_ps(_mm256_loadu_ps(inputs), _mm256_loadu_ps(inputs + 8), 0x88);
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(evens), 0xd8));
  }
  return _mm256_setr_ps(inputs[0], inputs[step], inputs[2 * step], inputs[3 * step], inputs[4 * step], inputs[5 * step],
                        inputs[6 * step], inputs[7 * step]);
}

template <Fold kind>
__attribute__((target("avx2"))) void fold_line_avx2(const float* inputs, int64_t step, float* results, int64_t count) {
  int64_t i = 0;
  for (; i + 8 < count || (step == 1 && i + 8 == count); i += 8) {  // never reads past the last input
    const __m256 value = load_strided8(inputs + i * step, step);
    const __m256 result = _mm256_loadu_ps(results + i);
    if constexpr (kind == Fold::Max) {
      const __m256 take =
          _mm256_or_ps(_mm256_cmp_ps(value, result, _CMP_GT_OQ), _mm256_cmp_ps(value, value, _CMP_UNORD_Q));
      _mm256_storeu_ps(results + i, _mm256_blendv_ps(result, value, take));
    } else {
      _mm256_storeu_ps(results + i, _mm256_add_ps(result, value));
    }
  }
  fold_line_portable<kind>(inputs + i * step, step, results + i, count - i);
}
#endif

template <Fold kind>
void fold_line(const float* inputs, int64_t step, float* results, int64_t count) {
#if defined(__x86_64__)
  if (kernel_isa() != Isa::Portable) return fold_line_avx2<kind>(inputs, step, results, count);
#endif
  fold_line_portable<kind>(inputs, step, results, count);
}

// Folds tap kw of input row `row` into results[ow] for the outputs it reaches.
template <Fold kind>
void fold_tap(const Window& w, const PoolPlanes& p, const float* row, int64_t kw, float* results) {
  const int64_t offset = kw * w.dilation.width - w.padding.width;
  const OutputRange outputs = valid_outputs(offset, w.stride.width, p.width, p.out_width);
  if (outputs.begin == outputs.end) return;
  fold_line<kind>(row + outputs.begin * w.stride.width + offset, w.stride.width, results + outputs.begin,
                  outputs.end - outputs.begin);
}

// The taps kw of a row that reach the input for at least one output: kw·dilation in
// [padding - (OW - 1)·stride, padding + W - 1]. Their count is bounded by the input's
// width (padding is at most half the kernel), whatever the kernel attribute says.
OutputRange reachable_columns(const Window& w, const PoolPlanes& p) {
  const int64_t low = w.padding.width - (p.out_width - 1) * w.stride.width;
  const int64_t begin = low <= 0 ? 0 : (low + w.dilation.width - 1) / w.dilation.width;
  const int64_t end = std::min(w.kernel.width, (w.padding.width + p.width - 1) / w.dilation.width + 1);
  return {std::min(begin, end), end};
}

// results[0, OW) of output row oh of one plane: the fold of its windows, in row order.
template <Fold kind>
void fold_row(const Window& w, const PoolPlanes& p, const float* plane, int64_t oh, float* results) {
  const int64_t first = oh * w.stride.height - w.padding.height;
  const OutputRange rows = valid_outputs(first, w.dilation.height, p.height, w.kernel.height);
  const OutputRange columns = reachable_columns(w, p);
  for (int64_t kh = rows.begin; kh < rows.end; ++kh) {
    const float* row = plane + (first + kh * w.dilation.height) * p.width;
    for (int64_t kw = columns.begin; kw < columns.end; ++kw) fold_tap<kind>(w, p, row, kw, results);
  }
}

Status max_pool2d_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_planes_input(context, input));
  Window window;
  PoolPlanes p;
  EDGERT_RETURN_IF_ERROR(read_window(context, true, window));
  EDGERT_RETURN_IF_ERROR(window_planes(context, input, window, p));
  Tensor out;
  EDGERT_RETURN_IF_ERROR(allocate_output(context, input, p.out_height, p.out_width, out));
  const Tensor x = input.contiguous();
  const float* xd = x.data_as<float>();
  float* od = out.data_as<float>();
  const int64_t taps = std::min(window.kernel.height, p.height) * std::min(window.kernel.width, p.width);
  for_each_output_row(p, p.out_width * taps, [&](int64_t plane, int64_t oh) {
    float* results = od + (plane * p.out_height + oh) * p.out_width;
    std::fill(results, results + p.out_width, -std::numeric_limits<float>::infinity());
    fold_row<Fold::Max>(window, p, xd + plane * p.height * p.width, oh, results);
  });
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// The divisor's factor along one dimension for output o (torch): the window's extent
// including padding but not past it, or only its in-bounds part.
int64_t divisor_factor(int64_t o, int64_t kernel, int64_t stride, int64_t padding, int64_t size, bool include_padding) {
  const int64_t start = o * stride - padding;
  const int64_t end = std::min(start + kernel, size + padding);
  if (include_padding) return end - start;
  return std::min(end, size) - std::max<int64_t>(start, 0);
}

// Every output position's divisor, as a float32: divisor_override, or the product of the
// row's and the column's factors.
std::vector<float> avg_divisors(const Window& w, const PoolPlanes& p, bool include_padding, int64_t divisor_override) {
  std::vector<float> divisors(static_cast<size_t>(p.out_height * p.out_width));
  for (int64_t oh = 0; oh < p.out_height; ++oh) {
    const int64_t rows =
        divisor_factor(oh, w.kernel.height, w.stride.height, w.padding.height, p.height, include_padding);
    for (int64_t ow = 0; ow < p.out_width; ++ow) {
      const int64_t columns =
          divisor_factor(ow, w.kernel.width, w.stride.width, w.padding.width, p.width, include_padding);
      divisors[static_cast<size_t>(oh * p.out_width + ow)] =
          static_cast<float>(divisor_override != 0 ? divisor_override : rows * columns);
    }
  }
  return divisors;
}

Status avg_pool2d_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_planes_input(context, input));
  Window w;
  PoolPlanes p;
  EDGERT_RETURN_IF_ERROR(read_window(context, false, w));
  EDGERT_RETURN_IF_ERROR(window_planes(context, input, w, p));
  const bool include_padding = context.attributes->get_int("count_include_pad", 1) != 0;
  const int64_t divisor_override = context.attributes->get_int("divisor_override", 0);
  Tensor out;
  EDGERT_RETURN_IF_ERROR(allocate_output(context, input, p.out_height, p.out_width, out));
  const std::vector<float> divisors = avg_divisors(w, p, include_padding, divisor_override);
  const Tensor x = input.contiguous();
  const float* xd = x.data_as<float>();
  float* od = out.data_as<float>();
  const int64_t taps = std::min(w.kernel.height, p.height) * std::min(w.kernel.width, p.width);
  for_each_output_row(p, p.out_width * taps, [&](int64_t plane, int64_t oh) {
    float* results = od + (plane * p.out_height + oh) * p.out_width;
    std::fill(results, results + p.out_width, 0.0f);
    fold_row<Fold::Add>(w, p, xd + plane * p.height * p.width, oh, results);
    binary_floats(BinaryOp::Div, results, 1, divisors.data() + oh * p.out_width, 1, results, p.out_width);
  });
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// ----------------------------------------------------------------- adaptive pooling, upsampling

// The attribute `name`: 2 ints >= 0, the output's height and width. The input must not be
// empty along a dimension whose output is not, and o·size must stay in range.
Status read_output_size(const KernelContext& context, const Tensor& input, const char* name, Pair& size) {
  if (context.attributes == nullptr || !context.attributes->has(name)) {
    return invalid(context, std::string("attribute ") + name + " (2 ints) is required");
  }
  EDGERT_RETURN_IF_ERROR(read_pair(context, name, {0, 0}, 0, size));
  const int64_t height = input.shape()[2], width = input.shape()[3];
  if ((size.height > 0 && height == 0) || (size.width > 0 && width == 0)) {
    return invalid(context, "input " + shape_text(input.shape()) + " is empty along a dimension the output is not");
  }
  int64_t product_h = 0, product_w = 0;
  if (size.height >= kMaxExtent || size.width >= kMaxExtent ||
      __builtin_mul_overflow(size.height + 1, height, &product_h) ||
      __builtin_mul_overflow(size.width + 1, width, &product_w) || product_h >= kMaxExtent || product_w >= kMaxExtent) {
    return invalid(context, std::string("attribute ") + name + " is too large");
  }
  return Status::success();
}

// Window o of `outputs` over `size`: [floor(o·size/outputs), ceil((o+1)·size/outputs)).
OutputRange adaptive_window(int64_t o, int64_t outputs, int64_t size) {
  return {o * size / outputs, ((o + 1) * size + outputs - 1) / outputs};
}

// Adaptive pooling of each plane to `output_size`: `window(source, width, rows, columns)`
// reduces one window (rows x columns of a plane whose rows are `width` apart).
template <typename Window>
Status adaptive_pool2d(KernelContext& context, Window window) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_planes_input(context, input));
  Pair size;
  EDGERT_RETURN_IF_ERROR(read_output_size(context, input, "output_size", size));
  Tensor out;
  EDGERT_RETURN_IF_ERROR(allocate_output(context, input, size.height, size.width, out));
  const PoolPlanes p{input.shape()[0] * input.shape()[1], input.shape()[2], input.shape()[3], size.height, size.width};
  const Tensor x = input.contiguous();
  const float* xd = x.data_as<float>();
  float* od = out.data_as<float>();
  for_each_output_row(p, p.width * (p.height / std::max<int64_t>(1, p.out_height) + 1), [&](int64_t plane, int64_t oh) {
    const OutputRange rows = adaptive_window(oh, p.out_height, p.height);
    const float* source = xd + plane * p.height * p.width;
    for (int64_t ow = 0; ow < p.out_width; ++ow) {
      const OutputRange columns = adaptive_window(ow, p.out_width, p.width);
      od[(plane * p.out_height + oh) * p.out_width + ow] = window(source, p.width, rows, columns);
    }
  });
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

Status adaptive_avg_pool2d_kernel(KernelContext& context) {
  return adaptive_pool2d(context, [](const float* source, int64_t width, OutputRange rows, OutputRange columns) {
    float sum = 0.0f;
    for (int64_t h = rows.begin; h < rows.end; ++h) {
      for (int64_t c = columns.begin; c < columns.end; ++c) sum = sum + source[h * width + c];
    }
    // torch divides by the window's height, then by its width.
    return sum / static_cast<float>(rows.end - rows.begin) / static_cast<float>(columns.end - columns.begin);
  });
}

Status adaptive_max_pool2d_kernel(KernelContext& context) {
  return adaptive_pool2d(context, [](const float* source, int64_t width, OutputRange rows, OutputRange columns) {
    float result = -std::numeric_limits<float>::infinity();
    for (int64_t h = rows.begin; h < rows.end; ++h) {
      for (int64_t c = columns.begin; c < columns.end; ++c)
        result = fold_value<Fold::Max>(result, source[h * width + c]);
    }
    return result;
  });
}

// The float32 step between source indices (torch's compute_scales_value): float32(1 / scale)
// for a scale factor given (> 0), else float32(size) / float32(outputs).
float nearest_step(double scale, int64_t outputs, int64_t size) {
  if (scale > 0.0) return static_cast<float>(1.0 / scale);
  return static_cast<float>(size) / static_cast<float>(outputs);
}

// torch's nearest source index: the same index when the sizes are equal, o / 2 when the
// output is twice the input, else min(floor(float(o) · step), size - 1), in float32 as torch
// computes it. nearest-exact (`exact`): min(floor(float32((o + 0.5) · step)), size - 1), the
// product in float64 then rounded to float32, as torch computes it.
int64_t nearest_source(int64_t o, int64_t outputs, int64_t size, bool exact, double scale) {
  const float step = nearest_step(scale, outputs, size);
  if (exact) {
    const float source = std::floor(static_cast<float>((static_cast<double>(o) + 0.5) * static_cast<double>(step)));
    return std::min(static_cast<int64_t>(source), size - 1);
  }
  if (outputs == size) return o;
  if (outputs == 2 * size) return o >> 1;
  const float source = std::floor(static_cast<float>(o) * step);
  return std::min(static_cast<int64_t>(source), size - 1);
}

// The optional attribute `scales`: 2 floats, torch's scale factors (<= 0: none given).
Status read_scales(const KernelContext& context, double scales[2]) {
  scales[0] = scales[1] = 0.0;
  if (context.attributes == nullptr || !context.attributes->has("scales")) return Status::success();
  const std::vector<double> given = context.attributes->get_floats("scales");
  if (given.size() != 2) return invalid(context, "attribute scales must be 2 floats");
  for (int d = 0; d < 2; ++d) {
    if (!std::isfinite(given[static_cast<size_t>(d)])) return invalid(context, "attribute scales must be finite");
    scales[d] = given[static_cast<size_t>(d)];
  }
  return Status::success();
}

Status upsample_nearest2d_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_planes_input(context, input));
  Pair size;
  EDGERT_RETURN_IF_ERROR(read_output_size(context, input, "size", size));
  double scales[2];
  EDGERT_RETURN_IF_ERROR(read_scales(context, scales));
  const bool exact = context.attributes->get_int("exact", 0) != 0;
  Tensor out;
  EDGERT_RETURN_IF_ERROR(allocate_output(context, input, size.height, size.width, out));
  const PoolPlanes p{input.shape()[0] * input.shape()[1], input.shape()[2], input.shape()[3], size.height, size.width};
  std::vector<int64_t> columns(static_cast<size_t>(p.out_width));
  for (int64_t ow = 0; ow < p.out_width; ++ow)
    columns[static_cast<size_t>(ow)] = nearest_source(ow, p.out_width, p.width, exact, scales[1]);
  const Tensor x = input.contiguous();
  const float* xd = x.data_as<float>();
  float* od = out.data_as<float>();
  for_each_output_row(p, p.out_width, [&](int64_t plane, int64_t oh) {
    const float* row = xd + (plane * p.height + nearest_source(oh, p.out_height, p.height, exact, scales[0])) * p.width;
    float* target = od + (plane * p.out_height + oh) * p.out_width;
    for (int64_t ow = 0; ow < p.out_width; ++ow) target[ow] = row[columns[static_cast<size_t>(ow)]];
  });
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::max_pool2d", max_pool2d_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::max_pool2d", {{"kernel", AttributeKind::Ints},
                                                  {"stride", AttributeKind::Ints},
                                                  {"padding", AttributeKind::Ints},
                                                  {"dilation", AttributeKind::Ints},
                                                  {"ceil_mode", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::avg_pool2d", avg_pool2d_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::avg_pool2d", {{"kernel", AttributeKind::Ints},
                                                  {"stride", AttributeKind::Ints},
                                                  {"padding", AttributeKind::Ints},
                                                  {"dilation", AttributeKind::Ints},
                                                  {"ceil_mode", AttributeKind::Int},
                                                  {"count_include_pad", AttributeKind::Int},
                                                  {"divisor_override", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::adaptive_avg_pool2d", adaptive_avg_pool2d_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::adaptive_avg_pool2d", {{"output_size", AttributeKind::Ints}});
EDGERT_REGISTER_OPERATOR("edgert::adaptive_max_pool2d", adaptive_max_pool2d_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::adaptive_max_pool2d", {{"output_size", AttributeKind::Ints}});
EDGERT_REGISTER_OPERATOR("edgert::upsample_nearest2d", upsample_nearest2d_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::upsample_nearest2d", {{"size", AttributeKind::Ints},
                                                          {"exact", AttributeKind::Int},
                                                          {"scales", AttributeKind::Floats}});

}  // namespace edgert::kernels
