// Quantized arithmetic: add, relu, linear (dynamic activations × per-channel int8 weights)
// and embedding_byte.
#include <algorithm>

#include <vector>

#include "../kernels/sliding_window.hpp"
#include "edgert/threadpool.h"
#include "integer_dot.hpp"
#include "quantized.hpp"

namespace edgert_quantized {
namespace {

using edgert::kernels::kParallelGrain;
using edgert::kernels::optional_input;
using edgert::kernels::product;

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
    return invalid(context, "a " + shape_text(a.shape()) + " and b " + shape_text(b.shape()) + " must have the same shape");
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

struct LinearOperands {
  const float* x;
  const int8_t* weight;
  const float* weight_scales;
  const int32_t* weight_zero_points;
  const float* bias;  // or null
  float* out;
  int64_t rows, features_in, features_out;
  bool relu;
  bool static_input;  // x quantized with input_scale / input_zero_point instead of per row
  float input_scale;
  int32_t input_zero_point;
};

constexpr QuantRange kInt8{-128, 127};

// Row r of x quantized with its own qparams (or the static ones); xq receives xq[r,k] - xz.
template <class Integer>
float quantize_row(const LinearOperands& op, int64_t r, Integer* xq) {
  const float* xr = op.x + r * op.features_in;
  float x_scale = op.input_scale;
  int32_t x_zero = op.input_zero_point;
  if (!op.static_input) choose_qparams(xr, op.features_in, kInt8, x_scale, x_zero);
  for (int64_t k = 0; k < op.features_in; ++k) {
    xq[k] = static_cast<Integer>(int64_t{quantize_value(xr[k], x_scale, x_zero, kInt8)} - x_zero);
  }
  return x_scale;
}

// out[r, n] from the exact sum of row r and channel n (the same for any way it was summed).
void finish_output(const LinearOperands& op, int64_t r, int64_t n, int64_t sum, float x_scale) {
  float v = static_cast<float>(sum) * (x_scale * op.weight_scales[n]);
  if (op.bias) v += op.bias[n];
  if (op.relu) v = v > 0.0f ? v : 0.0f;
  op.out[r * op.features_out + n] = v;
}

int64_t row_grain(const LinearOperands& op) {
  return std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, op.features_in * op.features_out));
}

// Every weight zero point (and a static input zero point) in int8's range: both factors
// lie in [-255, 255], and K such products (K <= 33025) stay within int32.
bool fits_int16_dot(const LinearOperands& op) {
  if (op.features_in > 33025) return false;
  if (op.static_input && (op.input_zero_point < -128 || op.input_zero_point > 127)) return false;
  for (int64_t n = 0; n < op.features_out; ++n) {
    if (op.weight_zero_points[n] < -128 || op.weight_zero_points[n] > 127) return false;
  }
  return true;
}

// The sums as int16 dot products (integer_dot.hpp), rows padded to kDotBlock with zeros.
void linear_int16(const LinearOperands& op) {
  const int64_t length = (op.features_in + kDotBlock - 1) / kDotBlock * kDotBlock;
  std::vector<int16_t> weight(static_cast<size_t>(length * op.features_out), 0);
  for (int64_t n = 0; n < op.features_out; ++n) {
    for (int64_t k = 0; k < op.features_in; ++k) {
      weight[static_cast<size_t>(n * length + k)] =
          static_cast<int16_t>(op.weight[n * op.features_in + k] - op.weight_zero_points[n]);
    }
  }
  edgert::parallel_for(0, op.rows, row_grain(op), [&](int64_t begin, int64_t end) {
    std::vector<int16_t> xq(static_cast<size_t>(length), 0);
    std::vector<int32_t> sums(static_cast<size_t>(op.features_out));
    for (int64_t r = begin; r < end; ++r) {
      const float x_scale = quantize_row(op, r, xq.data());
      dot_rows(xq.data(), weight.data(), length, op.features_out, sums.data());
      for (int64_t n = 0; n < op.features_out; ++n) finish_output(op, r, n, sums[static_cast<size_t>(n)], x_scale);
    }
  });
}

// Any int32 zero point: the sums in int64.
void linear_int64(const LinearOperands& op) {
  edgert::parallel_for(0, op.rows, row_grain(op), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> xq(static_cast<size_t>(op.features_in));
    for (int64_t r = begin; r < end; ++r) {
      const float x_scale = quantize_row(op, r, xq.data());
      for (int64_t n = 0; n < op.features_out; ++n) {
        const int8_t* wr = op.weight + n * op.features_in;
        const int32_t zero = op.weight_zero_points[n];
        int64_t sum = 0;
        for (int64_t k = 0; k < op.features_in; ++k) sum += xq[static_cast<size_t>(k)] * (int64_t{wr[k]} - zero);
        finish_output(op, r, n, sum, x_scale);
      }
    }
  });
}

// The static qparams (inputs 5 and 6, both or neither) and the activation.
Status read_linear_options(const KernelContext& context, LinearOperands& op) {
  const Tensor* scale = optional_input(context, 5);
  const Tensor* zero_point = optional_input(context, 6);
  if ((scale == nullptr) != (zero_point == nullptr)) {
    return invalid(context, "input_scale and input_zero_point must be given together");
  }
  op.static_input = scale != nullptr;
  op.input_scale = 1.0f;
  op.input_zero_point = 0;
  if (op.static_input) {
    EDGERT_RETURN_IF_ERROR(read_qparams(context, scale, zero_point, "input", op.input_scale, op.input_zero_point));
  }
  return edgert::kernels::read_relu_activation(context, op.relu);
}

// Inputs: x float32 [..., K], weight int8 [N, K], weight_scales float32 [N],
// weight_zero_points int32 [N], bias float32 [N] (optional), input_scale [1] and
// input_zero_point [1] (optional, together). Output float32 [..., N].
// Each row r of x (the last dimension) is quantized to int8 with its own asymmetric qparams
// (xs[r], xz[r]) chosen like choose_qparams, or with the static ones; then
// out[r, n] = float(Σ_k (xq[r,k] - xz[r])·(wq[n,k] - wz[n])) · (xs[r] · ws[n]) + bias[n],
// the sum exact in int64, then the activation (attribute "none" or "relu"). A row's result
// never depends on the other rows.
Status linear_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 4, 7));
  const Tensor& x = *context.inputs[0];
  const Tensor& weight = *context.inputs[1];
  const Tensor* bias = optional_input(context, 4);
  if (x.dtype() != DType::Float32) return invalid(context, "input must be float32");
  if (weight.dtype() != DType::Int8) return invalid(context, "weight must be int8");
  if (x.dim() < 1 || weight.dim() != 2 || x.shape().back() != weight.shape()[1]) {
    return invalid(context, "input " + shape_text(x.shape()) + " and weight " + shape_text(weight.shape()) +
                                " do not match (input [..., K], weight [N, K])");
  }
  const int64_t features_in = weight.shape()[1], features_out = weight.shape()[0];
  Tensor scales, zero_points, bias_data;
  EDGERT_RETURN_IF_ERROR(read_channel_qparams(context, context.inputs[2], context.inputs[3], features_out,
                                              scales, zero_points));
  if (bias) {
    if (bias->dtype() != DType::Float32 || bias->dim() != 1 || bias->shape()[0] != features_out) {
      return invalid(context, "bias must be float32 [" + std::to_string(features_out) + "]");
    }
    bias_data = bias->contiguous();
  }
  const Tensor cx = x.contiguous(), cw = weight.contiguous();
  const int64_t rows = product(x.shape(), 0, x.shape().size() - 1);
  std::vector<int64_t> shape = x.shape();
  shape.back() = features_out;
  Tensor out(DType::Float32, shape);
  LinearOperands operands{cx.data_as<float>(), cw.data_as<int8_t>(), scales.data_as<float>(),
                          zero_points.data_as<int32_t>(), bias ? bias_data.data_as<float>() : nullptr,
                          out.data_as<float>(), rows, features_in, features_out, false, false, 1.0f, 0};
  EDGERT_RETURN_IF_ERROR(read_linear_options(context, operands));
  for (int64_t i = 0; i < cx.numel() && !operands.static_input; ++i) {  // per-row qparams need finite rows
    if (!std::isfinite(cx.data_as<float>()[i])) return invalid(context, "input holds a non-finite value");
  }
  if (fits_int16_dot(operands)) linear_int16(operands);
  else linear_int64(operands);
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
  if (!is_quantized(weight.dtype()) || weight.dim() != 2) return invalid(context, "weight must be int8 or uint8 [V, D]");
  if (indices.dtype() != DType::Int32 && indices.dtype() != DType::Int64) {
    return invalid(context, "indices must be int32 or int64");
  }
  const int64_t rows = weight.shape()[0], width = weight.shape()[1];
  Tensor scales, zero_points;
  if (context.inputs[2]) {
    EDGERT_RETURN_IF_ERROR(read_channel_qparams(context, context.inputs[1], context.inputs[2], rows, scales, zero_points));
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
EDGERT_REGISTER_OPERATOR("edgert_quantized::relu", relu_kernel);
EDGERT_REGISTER_OPERATOR("edgert_quantized::linear", linear_kernel);
EDGERT_REGISTER_OPERATOR("edgert_quantized::embedding_byte", embedding_byte_kernel);

}  // namespace edgert_quantized
