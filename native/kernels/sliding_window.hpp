// Window arithmetic shared by the convolutions (float and quantized) and the pooling
// kernels: reading the 2-int attributes, output sizes computed with overflow checks, and
// the range of outputs whose window tap falls inside the input.
//
// Along one spatial dimension, output o's tap t reads input o·stride - padding + t·dilation;
// taps outside [0, size) read the padding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.hpp"

namespace edgert::kernels {

// A spatial pair: index 0 is the height, index 1 the width.
struct Pair {
  int64_t height;
  int64_t width;
};

// The attribute `name` as two ints, each >= minimum; `fallback` when it is absent.
inline Status read_pair(const KernelContext& context, const char* name, Pair fallback, int64_t minimum, Pair& value) {
  value = fallback;
  if (context.attributes == nullptr || !context.attributes->has(name)) return Status::success();
  const std::vector<int64_t> values = context.attributes->get_ints(name);
  if (values.size() != 2) return invalid(context, std::string("attribute ") + name + " must be 2 ints");
  if (values[0] < minimum || values[1] < minimum) {
    return invalid(context, std::string("attribute ") + name + " must be >= " + std::to_string(minimum) + ", got " +
                                shape_text(values));
  }
  value = {values[0], values[1]};
  return Status::success();
}

// The attribute `activation`: "none" (default) or "relu".
inline Status read_relu_activation(const KernelContext& context, bool& relu) {
  const std::string name = context.attributes ? context.attributes->get_string("activation", "none") : "none";
  if (name != "none" && name != "relu") {
    return invalid(context, "attribute activation must be \"none\" or \"relu\", got \"" + name + "\"");
  }
  relu = name == "relu";
  return Status::success();
}

// Largest value any window coordinate may take: keeps every index product below in range.
constexpr int64_t kMaxExtent = int64_t{1} << 56;

// The output size along one dimension, torch's formula: floor((size + 2·padding -
// dilation·(kernel - 1) - 1 + (ceil_mode ? stride - 1 : 0)) / stride) + 1, and with
// ceil_mode one less when the last window would start past the input and its leading
// padding. At least 1 when the (dilated) kernel fits; 0 or less otherwise. False when a
// value leaves kMaxExtent. kernel, stride and dilation are >= 1, size and padding >= 0.
inline bool output_extent(int64_t size, int64_t kernel, int64_t stride, int64_t padding, int64_t dilation,
                          bool ceil_mode, int64_t& out) {
  int64_t span = 0, padded = 0;
  if (__builtin_mul_overflow(dilation, kernel - 1, &span) || span >= kMaxExtent ||
      __builtin_mul_overflow(padding, 2, &padded) || padded >= kMaxExtent || size >= kMaxExtent ||
      stride >= kMaxExtent) {
    return false;
  }
  const int64_t room = size + padded - span - 1 + (ceil_mode ? stride - 1 : 0);  // |room| < 2^59
  out = (room >= 0 ? room / stride : -((-room + stride - 1) / stride)) + 1;
  if (ceil_mode && out >= 1 && (out - 1) * stride >= size + padding) --out;
  return true;
}

// The outputs o in [0, outputs) whose tap at `offset` = t·dilation - padding reads inside
// [0, size): o·stride + offset in [0, size). Empty ranges have begin == end.
struct OutputRange {
  int64_t begin;
  int64_t end;
};

inline OutputRange valid_outputs(int64_t offset, int64_t stride, int64_t size, int64_t outputs) {
  const int64_t begin = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
  const int64_t limit = size - offset;  // o·stride < limit
  const int64_t end = limit <= 0 ? 0 : (limit + stride - 1) / stride;
  const int64_t clipped_begin = std::min(begin, outputs);
  return {clipped_begin, std::max(clipped_begin, std::min(end, outputs))};
}

// Shapes and attributes of a 2-D convolution: x [N, C, H, W], weight [O, C/groups, KH, KW].
struct ConvolutionGeometry {
  int64_t batch, channels, height, width;
  int64_t out_channels, kernel_height, kernel_width;
  Pair stride, padding, dilation;
  int64_t groups;
  int64_t out_height, out_width;

  int64_t group_channels() const { return channels / groups; }
  int64_t group_out_channels() const { return out_channels / groups; }
  // Length of one output's sum: the (c, kh, kw) of one group.
  int64_t patch() const { return group_channels() * kernel_height * kernel_width; }
  int64_t out_plane() const { return out_height * out_width; }
  std::vector<int64_t> output_shape() const { return {batch, out_channels, out_height, out_width}; }
};

inline Status check_convolution_shapes(const KernelContext& context, const std::vector<int64_t>& x,
                                       const std::vector<int64_t>& weight, int64_t groups) {
  if (x.size() != 4 || weight.size() != 4) {
    return invalid(context, "input " + shape_text(x) + " and weight " + shape_text(weight) +
                                " must be [N, C, H, W] and [O, C/groups, KH, KW]");
  }
  if (x[1] % groups != 0 || weight[0] % groups != 0 || weight[1] != x[1] / groups) {
    return invalid(context, "input " + shape_text(x) + " and weight " + shape_text(weight) +
                                " do not match for groups=" + std::to_string(groups) +
                                " (C and O divisible by groups, weight [O, C/groups, KH, KW])");
  }
  if (weight[2] < 1 || weight[3] < 1) return invalid(context, "the kernel must be at least 1x1");
  return Status::success();
}

// Reads stride, padding, dilation and groups, checks the shapes and sizes the output (its
// byte size checked against kMaxTensorBytes).
inline Status convolution_geometry(const KernelContext& context, const std::vector<int64_t>& x,
                                   const std::vector<int64_t>& weight, ConvolutionGeometry& geometry) {
  ConvolutionGeometry& g = geometry;
  EDGERT_RETURN_IF_ERROR(read_pair(context, "stride", {1, 1}, 1, g.stride));
  EDGERT_RETURN_IF_ERROR(read_pair(context, "padding", {0, 0}, 0, g.padding));
  EDGERT_RETURN_IF_ERROR(read_pair(context, "dilation", {1, 1}, 1, g.dilation));
  g.groups = context.attributes ? context.attributes->get_int("groups", 1) : 1;
  if (g.groups < 1) return invalid(context, "attribute groups must be >= 1");
  EDGERT_RETURN_IF_ERROR(check_convolution_shapes(context, x, weight, g.groups));
  g.batch = x[0], g.channels = x[1], g.height = x[2], g.width = x[3];
  g.out_channels = weight[0], g.kernel_height = weight[2], g.kernel_width = weight[3];
  if (!output_extent(g.height, g.kernel_height, g.stride.height, g.padding.height, g.dilation.height, false,
                     g.out_height) ||
      !output_extent(g.width, g.kernel_width, g.stride.width, g.padding.width, g.dilation.width, false, g.out_width) ||
      g.out_height < 1 || g.out_width < 1) {
    return invalid(context, "the kernel " + shape_text({g.kernel_height, g.kernel_width}) +
                                " (dilated) does not fit the padded input " + shape_text({g.height, g.width}) +
                                " or the sizes are too large");
  }
  int64_t count = 0;
  if (!checked_element_count(g.output_shape(), sizeof(float), &count)) {
    return invalid(context, "the output " + shape_text(g.output_shape()) + " is too large");
  }
  return Status::success();
}

}  // namespace edgert::kernels
