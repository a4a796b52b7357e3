// Conversions between float32 and int8/uint8: per tensor, per channel, and choose_qparams.
#include <algorithm>
#include <limits>

#include "edgert/threadpool.h"
#include "quantized.hpp"

namespace edgert_quantized {
namespace {

using edgert::kernels::kParallelGrain;
using edgert::kernels::normalize_axis;
using edgert::kernels::product;

// Qparams of element i: a per-tensor scale/zero point, or per channel along one axis.
struct Qparams {
  const float* scales;
  const int32_t* zero_points;
  int64_t inner = 1;     // elements per channel step (product of dims after the axis)
  int64_t channels = 1;  // 1 for per tensor

  int64_t channel(int64_t i) const { return channels == 1 ? 0 : (i / inner) % channels; }
};

Tensor quantize(const Tensor& input, DType dtype, const Qparams& qparams) {
  const Tensor x = input.contiguous();
  Tensor out(dtype, x.shape());
  const float* xd = x.data_as<float>();
  void* od = out.data();
  const QuantRange range = range_of(dtype);
  edgert::parallel_for(0, x.numel(), kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = qparams.channel(i);
      store_quantized(od, dtype, i, quantize_value(xd[i], qparams.scales[c], qparams.zero_points[c], range));
    }
  });
  return out;
}

Tensor dequantize(const Tensor& input, const Qparams& qparams) {
  const Tensor q = input.contiguous();
  Tensor out(DType::Float32, q.shape());
  const void* qd = q.data();
  float* od = out.data_as<float>();
  edgert::parallel_for(0, q.numel(), kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = qparams.channel(i);
      od[i] = dequantize_value(load_quantized(qd, q.dtype(), i), qparams.scales[c], qparams.zero_points[c]);
    }
  });
  return out;
}

// Inputs: x float32, scale float32 [1], zero_point int32 [1]. Attribute dtype.
Status quantize_per_tensor_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 3, 3));
  const Tensor& x = *context.inputs[0];
  if (x.dtype() != DType::Float32) return invalid(context, "input must be float32");
  DType dtype;
  EDGERT_RETURN_IF_ERROR(quantized_dtype(context, dtype));
  float scale;
  int32_t zero_point;
  EDGERT_RETURN_IF_ERROR(read_qparams(context, context.inputs[1], context.inputs[2], "input", scale, zero_point));
  (*context.outputs)[0] = quantize(x, dtype, Qparams{&scale, &zero_point});
  return Status::success();
}

// Inputs: q int8/uint8, scale float32 [1], zero_point int32 [1]. Output float32.
Status dequantize_per_tensor_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 3, 3));
  const Tensor& q = *context.inputs[0];
  if (!is_quantized(q.dtype())) return invalid(context, "input must be int8 or uint8");
  float scale;
  int32_t zero_point;
  EDGERT_RETURN_IF_ERROR(read_qparams(context, context.inputs[1], context.inputs[2], "input", scale, zero_point));
  (*context.outputs)[0] = dequantize(q, Qparams{&scale, &zero_point});
  return Status::success();
}

// Per-channel layout along attribute `axis` (default 0); keeps the qparam tensors alive.
struct ChannelQparams {
  Tensor scales, zero_points;
  Qparams qparams{nullptr, nullptr};
};

Status channel_qparams(const KernelContext& context, const Tensor& tensor, ChannelQparams& result) {
  int64_t axis = context.attributes ? context.attributes->get_int("axis", 0) : 0;
  if (!normalize_axis(axis, tensor.dim())) {
    return invalid(context, "axis is out of range for a tensor of rank " + std::to_string(tensor.dim()));
  }
  const int64_t channels = tensor.shape()[static_cast<size_t>(axis)];
  EDGERT_RETURN_IF_ERROR(
      read_channel_qparams(context, context.inputs[1], context.inputs[2], channels, result.scales, result.zero_points));
  result.qparams = Qparams{result.scales.data_as<float>(), result.zero_points.data_as<int32_t>(),
                           product(tensor.shape(), static_cast<size_t>(axis) + 1, tensor.shape().size()), channels};
  if (channels == 1) result.qparams.inner = 1;
  return Status::success();
}

// Inputs: x float32, scales float32 [C], zero_points int32 [C] with C = x.shape[axis].
Status quantize_per_channel_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 3, 3));
  const Tensor& x = *context.inputs[0];
  if (x.dtype() != DType::Float32) return invalid(context, "input must be float32");
  DType dtype;
  EDGERT_RETURN_IF_ERROR(quantized_dtype(context, dtype));
  ChannelQparams qparams;
  EDGERT_RETURN_IF_ERROR(channel_qparams(context, x, qparams));
  (*context.outputs)[0] = quantize(x, dtype, qparams.qparams);
  return Status::success();
}

Status dequantize_per_channel_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 3, 3));
  const Tensor& q = *context.inputs[0];
  if (!is_quantized(q.dtype())) return invalid(context, "input must be int8 or uint8");
  ChannelQparams qparams;
  EDGERT_RETURN_IF_ERROR(channel_qparams(context, q, qparams));
  (*context.outputs)[0] = dequantize(q, qparams.qparams);
  return Status::success();
}

// Input: x float32 (finite). Attribute dtype. Outputs: scale float32 [1], zero_point int32 [1]
// (see choose_qparams in quantized.hpp).
Status choose_qparams_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  if (context.outputs->size() != 2) return invalid(context, "expected two outputs (scale, zero_point)");
  const Tensor& x = *context.inputs[0];
  if (x.dtype() != DType::Float32) return invalid(context, "input must be float32");
  DType dtype;
  EDGERT_RETURN_IF_ERROR(quantized_dtype(context, dtype));
  const Tensor cx = x.contiguous();
  const float* data = cx.data_as<float>();
  for (int64_t i = 0; i < cx.numel(); ++i) {
    if (!std::isfinite(data[i])) return invalid(context, "input holds a non-finite value");
  }
  Tensor scale(DType::Float32, {1}), zero_point(DType::Int32, {1});
  choose_qparams(data, cx.numel(), range_of(dtype), *scale.data_as<float>(), *zero_point.data_as<int32_t>());
  (*context.outputs)[0] = std::move(scale);
  (*context.outputs)[1] = std::move(zero_point);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert_quantized::quantize_per_tensor", quantize_per_tensor_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::quantize_per_tensor", {{"dtype", edgert::AttributeKind::String}});
EDGERT_REGISTER_OPERATOR("edgert_quantized::dequantize_per_tensor", dequantize_per_tensor_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::dequantize_per_tensor");
EDGERT_REGISTER_OPERATOR("edgert_quantized::quantize_per_channel", quantize_per_channel_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::quantize_per_channel",
                           {{"axis", edgert::AttributeKind::Int}, {"dtype", edgert::AttributeKind::String}});
EDGERT_REGISTER_OPERATOR("edgert_quantized::dequantize_per_channel", dequantize_per_channel_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::dequantize_per_channel", {{"axis", edgert::AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert_quantized::choose_qparams", choose_qparams_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::choose_qparams", {{"dtype", edgert::AttributeKind::String}});

}  // namespace edgert_quantized
