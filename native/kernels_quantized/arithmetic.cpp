// Quantized arithmetic: add, relu and embedding_byte (linear is in linear.cpp).
#include <algorithm>

#include "edgert/threadpool.h"
#include "quantized.hpp"

namespace edgert_quantized {
namespace {

using edgert::kernels::kParallelGrain;

// Inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, out_scale, out_zero_point.
// a and b share dtype (int8/uint8) and shape; the output has the same dtype and shape:
// quantize(dequantize(a) + dequantize(b), out_scale, out_zero_point).
Status add_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 8, 8));
  const Tensor& a = *context.inputs[0];
  const Tensor& b = *context.inputs[3];
  if (!is_quantized(a.dtype()) || a.dtype() != b.dtype()) {
    return invalid(context, "a and b must both be int8 or both be uint8");
  }
  if (a.shape() != b.shape()) {
    return invalid(context,
                   "a " + shape_text(a.shape()) + " and b " + shape_text(b.shape()) + " must have the same shape");
  }
  float sa, sb, so;
  int32_t za, zb, zo;
  EDGERT_RETURN_IF_ERROR(read_qparams(context, context.inputs[1], context.inputs[2], "a", sa, za));
  EDGERT_RETURN_IF_ERROR(read_qparams(context, context.inputs[4], context.inputs[5], "b", sb, zb));
  EDGERT_RETURN_IF_ERROR(read_qparams(context, context.inputs[6], context.inputs[7], "output", so, zo));
  const Tensor ca = a.contiguous(), cb = b.contiguous();
  Tensor out(a.dtype(), a.shape());
  const DType dtype = a.dtype();
  const QuantRange range = range_of(dtype);
  edgert::parallel_for(0, out.numel(), kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const float sum = dequantize_value(load_quantized(ca.data(), dtype, i), sa, za) +
                        dequantize_value(load_quantized(cb.data(), dtype, i), sb, zb);
      store_quantized(out.data(), dtype, i, quantize_value(sum, so, zo, range));
    }
  });
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// Inputs: q int8/uint8, zero_point int32 [1]. Output max(q, zero_point), same qparams.
Status relu_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 2));
  const Tensor& q = *context.inputs[0];
  const Tensor& zero = *context.inputs[1];
  if (!is_quantized(q.dtype())) return invalid(context, "input must be int8 or uint8");
  if (zero.dtype() != DType::Int32 || zero.numel() != 1) return invalid(context, "zero point must be int32 [1]");
  const QuantRange range = range_of(q.dtype());
  const int32_t zero_point = std::clamp(*zero.contiguous().data_as<int32_t>(), range.min, range.max);
  const Tensor cq = q.contiguous();
  Tensor out(q.dtype(), q.shape());
  for (int64_t i = 0; i < out.numel(); ++i) {
    store_quantized(out.data(), q.dtype(), i, std::max(load_quantized(cq.data(), q.dtype(), i), zero_point));
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// Inputs: weight int8/uint8 [V, D], scales float32 [V], zero_points int32 [V] (optional:
// zero), indices int32/int64 [...]. Output float32 [..., D]: row i dequantized with its own qparams.
Status embedding_byte_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 4));
  if (context.inputs.size() != 4 || !context.inputs[3]) {
    return invalid(context, "expected inputs (weight, scales, zero_points or absent, indices)");
  }
  const Tensor& weight = *context.inputs[0];
  const Tensor& indices = *context.inputs[3];
  if (!is_quantized(weight.dtype()) || weight.dim() != 2)
    return invalid(context, "weight must be int8 or uint8 [V, D]");
  if (indices.dtype() != DType::Int32 && indices.dtype() != DType::Int64) {
    return invalid(context, "indices must be int32 or int64");
  }
  const int64_t rows = weight.shape()[0], width = weight.shape()[1];
  Tensor scales, zero_points;
  if (context.inputs[2]) {
    EDGERT_RETURN_IF_ERROR(
        read_channel_qparams(context, context.inputs[1], context.inputs[2], rows, scales, zero_points));
  } else {
    Tensor zeros(DType::Int32, {rows});
    EDGERT_RETURN_IF_ERROR(read_channel_qparams(context, context.inputs[1], &zeros, rows, scales, zero_points));
  }
  const Tensor cw = weight.contiguous(), ci = indices.contiguous();
  std::vector<int64_t> shape = indices.shape();
  shape.push_back(width);
  Tensor out(DType::Float32, shape);
  float* od = out.data_as<float>();
  for (int64_t i = 0; i < ci.numel(); ++i) {
    const int64_t row = ci.dtype() == DType::Int32 ? ci.data_as<int32_t>()[i] : ci.data_as<int64_t>()[i];
    if (row < 0 || row >= rows) {
      return invalid(context, "index " + std::to_string(row) + " is out of range [0, " + std::to_string(rows) + ")");
    }
    const float scale = scales.data_as<float>()[row];
    const int32_t zero = zero_points.data_as<int32_t>()[row];
    for (int64_t j = 0; j < width; ++j) {
      od[i * width + j] = dequantize_value(load_quantized(cw.data(), weight.dtype(), row * width + j), scale, zero);
    }
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert_quantized::add", add_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::add");
EDGERT_REGISTER_OPERATOR("edgert_quantized::relu", relu_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::relu");
EDGERT_REGISTER_OPERATOR("edgert_quantized::embedding_byte", embedding_byte_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::embedding_byte");

}  // namespace edgert_quantized
