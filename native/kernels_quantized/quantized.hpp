// Shared arithmetic of the quantized kernels: integer ranges, rounding and qparam inputs.
//
// Quantization: q = clamp(round_half_even(x / scale) + zero_point, qmin, qmax), in float.
// Dequantization: x = float(q - zero_point) * scale.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "../kernels/common.hpp"

namespace edgert_quantized {

using edgert::Code;
using edgert::DType;
using edgert::KernelContext;
using edgert::Status;
using edgert::Tensor;
using edgert::kernels::check_arity;
using edgert::kernels::invalid;
using edgert::kernels::shape_text;

struct QuantRange {
  int32_t min;
  int32_t max;
};

inline bool is_quantized(DType dtype) {
  return dtype == DType::Int8 || dtype == DType::UInt8;
}

inline QuantRange range_of(DType dtype) {
  return dtype == DType::UInt8 ? QuantRange{0, 255} : QuantRange{-128, 127};
}

// Attribute `dtype`: "int8" (default) or "uint8".
inline Status quantized_dtype(const KernelContext& context, DType& dtype) {
  const std::string name = context.attributes ? context.attributes->get_string("dtype", "int8") : "int8";
  if (name == "int8")
    dtype = DType::Int8;
  else if (name == "uint8")
    dtype = DType::UInt8;
  else
    return invalid(context, "attribute dtype must be \"int8\" or \"uint8\", got \"" + name + "\"");
  return Status::success();
}

// round_half_even relies on the default floating-point rounding mode (to nearest, ties even).
// (No NaN is left when it is clamped, so the comparisons are fmax and fmin, written out: the
// vector kernels inline this for their last elements, and fmax and fmin are calls into the C
// library, baseline code, there.)
inline __attribute__((always_inline)) int32_t quantize_value(float value, float scale, int32_t zero_point,
                                                             QuantRange range) {
  float rounded = std::nearbyint(value / scale);
  if (std::isnan(rounded)) rounded = 0.0f;
  rounded += static_cast<float>(zero_point);
  const float low = static_cast<float>(range.min), high = static_cast<float>(range.max);
  rounded = rounded < low ? low : rounded;
  rounded = rounded > high ? high : rounded;
  return static_cast<int32_t>(rounded);
}

inline float dequantize_value(int32_t value, float scale, int32_t zero_point) {
  // In 64 bits: a zero point of INT32_MIN must not overflow the subtraction.
  return static_cast<float>(static_cast<int64_t>(value) - zero_point) * scale;
}

// Reads element i of an int8 or uint8 tensor's data.
inline int32_t load_quantized(const void* data, DType dtype, int64_t i) {
  return dtype == DType::UInt8 ? static_cast<const uint8_t*>(data)[i] : static_cast<const int8_t*>(data)[i];
}

inline void store_quantized(void* data, DType dtype, int64_t i, int32_t value) {
  if (dtype == DType::UInt8)
    static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(value);
  else
    static_cast<int8_t*>(data)[i] = static_cast<int8_t>(value);
}

// Per-tensor qparams: a float32 scale (one element, finite, > 0) and an int32 zero point
// (one element) given as tensors.
inline Status read_qparams(const KernelContext& context, const Tensor* scale, const Tensor* zero_point,
                           const char* what, float& scale_value, int32_t& zero_point_value) {
  if (!scale || !zero_point || scale->dtype() != DType::Float32 || scale->numel() != 1 ||
      zero_point->dtype() != DType::Int32 || zero_point->numel() != 1) {
    return invalid(context, std::string(what) +
                                " qparams must be a one-element float32 scale and a "
                                "one-element int32 zero point");
  }
  scale_value = *scale->contiguous().data_as<float>();
  zero_point_value = *zero_point->contiguous().data_as<int32_t>();
  if (!(scale_value > 0.0f) || !std::isfinite(scale_value)) {
    return invalid(context, std::string(what) + " scale must be finite and > 0, got " + std::to_string(scale_value));
  }
  return Status::success();
}

// Per-channel qparams: float32 scales [channels] (finite, > 0) and int32 zero points
// [channels], returned as contiguous tensors.
inline Status read_channel_qparams(const KernelContext& context, const Tensor* scales, const Tensor* zero_points,
                                   int64_t channels, Tensor& scales_out, Tensor& zero_points_out) {
  if (!scales || scales->dtype() != DType::Float32 || scales->dim() != 1 || scales->numel() != channels) {
    return invalid(context, "scales must be float32 [" + std::to_string(channels) + "]");
  }
  if (!zero_points || zero_points->dtype() != DType::Int32 || zero_points->dim() != 1 ||
      zero_points->numel() != channels) {
    return invalid(context, "zero points must be int32 [" + std::to_string(channels) + "]");
  }
  scales_out = scales->contiguous();
  zero_points_out = zero_points->contiguous();
  const float* data = scales_out.data_as<float>();
  for (int64_t c = 0; c < channels; ++c) {
    if (!(data[c] > 0.0f) || !std::isfinite(data[c])) {
      return invalid(context, "scale " + std::to_string(c) + " must be finite and > 0");
    }
  }
  return Status::success();
}

// Asymmetric qparams covering [low, high] (low <= 0 <= high):
// scale = float((high - low) / (qmax - qmin)) in double (1 when that is 0),
// zero_point = clamp(qmin - round_half_even(low / scale), qmin, qmax).
inline void qparams_of_range(float low, float high, QuantRange range, float& scale, int32_t& zero_point) {
  scale = static_cast<float>((static_cast<double>(high) - static_cast<double>(low)) /
                             static_cast<double>(range.max - range.min));
  if (scale == 0.0f) scale = 1.0f;
  const double zero = range.min - std::nearbyint(static_cast<double>(low) / static_cast<double>(scale));
  zero_point = static_cast<int32_t>(std::fmin(std::fmax(zero, range.min), range.max));
}

// Asymmetric qparams covering [min(0, min x), max(0, max x)] of `count` finite values
// (qparams_of_range).
inline void choose_qparams(const float* data, int64_t count, QuantRange range, float& scale, int32_t& zero_point) {
  float low = 0.0f, high = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    low = std::fmin(low, data[i]);
    high = std::fmax(high, data[i]);
  }
  qparams_of_range(low, high, range, scale, zero_point);
}

}  // namespace edgert_quantized
