// edgert_quantized::linear (docs/operators.md): float32 x, int8 weights with per-output-channel
// qparams, float32 out, on the int8 GEMM (int8_gemm.hpp).
//
// Each row of x is quantized to int8 (its own qparams, or the static ones) into the GEMM's
// left operand; the weight is its right operand, packed into panels once per program by the
// prepare function when it is a constant (per call otherwise), with its per-channel sums for
// the zero-point compensation. The GEMM's epilogue gives
//   out[r, n] = float32(Σ_k (xq[r,k] - xz[r]) · (wq[n,k] - wz[n])) · (xs[r] · ws[n]) + bias[n]
// and the activation. A row's result never depends on the other rows, the instruction set or
// the thread count. Rows longer than the GEMM's kMaxDepth keep an int64 loop.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "../kernels/sliding_window.hpp"
#include "edgert/threadpool.h"
#include "int8_gemm.hpp"
#include "quantized.hpp"

namespace edgert_quantized {
namespace {

using edgert::PrepareContext;
using edgert::kernels::kParallelGrain;
using edgert::kernels::optional_input;
using edgert::kernels::product;

constexpr QuantRange kInt8{-128, 127};

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

// The weight as the GEMM's right operand, for the instruction set it was packed for.
struct PackedWeight {
  IntegerIsa isa;
  int64_t features_out, features_in;
  std::vector<uint8_t> panels;
  std::vector<int64_t> sums;  // Σ_k wq[n, k]
};

std::shared_ptr<PackedWeight> pack_weight(const int8_t* weight, int64_t features_out, int64_t features_in) {
  const Int8Gemm& gemm = int8_gemm();
  auto packed = std::make_shared<PackedWeight>();
  packed->isa = gemm.isa;
  packed->features_out = features_out, packed->features_in = features_in;
  packed->panels.resize(static_cast<size_t>(panel_count(features_out) * panel_bytes(padded_depth(features_in))));
  packed->sums.resize(static_cast<size_t>(features_out));
  pack_right(weight, features_out, features_in, gemm.panel_bias, packed->panels.data(), packed->sums.data());
  return packed;
}

// A constant int8 [N, K] weight (K within the GEMM's reach) is packed once for every run;
// anything else is left to the kernel, which reports what is wrong.
Status prepare_linear(const PrepareContext& context, std::shared_ptr<const void>& state) {
  const Tensor* weight = context.constants.size() > 1 ? context.constants[1] : nullptr;
  if (!weight || weight->dtype() != DType::Int8 || weight->dim() != 2 || weight->shape()[1] > kMaxDepth) {
    return Status::success();
  }
  const Tensor contiguous = weight->contiguous();
  state = pack_weight(contiguous.data_as<int8_t>(), weight->shape()[0], weight->shape()[1]);
  return Status::success();
}

// ------------------------------------------------------------------- the GEMM path

// The quantized rows (the left operand) and what the epilogue needs of each row.
struct QuantizedRows {
  std::unique_ptr<int16_t[]> storage;  // int8 or int16 values, rows padded with zeros to the GEMM's depth
  std::vector<int32_t> sums, zeros;
  std::vector<float> scales;
  std::vector<uint8_t> finite;
};

QuantizedRows quantize_rows(const Int8Gemm& gemm, const LinearOperands& op, int64_t depth) {
  QuantizedRows rows;
  const int64_t element = left_element_size(gemm);
  rows.storage.reset(new int16_t[static_cast<size_t>((op.rows * depth * element + 1) / 2)]);
  rows.sums.resize(static_cast<size_t>(op.rows));
  rows.zeros.resize(static_cast<size_t>(op.rows));
  rows.scales.resize(static_cast<size_t>(op.rows));
  rows.finite.assign(static_cast<size_t>(op.rows), 1);
  char* base = reinterpret_cast<char*>(rows.storage.get());
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, op.features_in));
  edgert::parallel_for(0, op.rows, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* x = op.x + r * op.features_in;
      const size_t index = static_cast<size_t>(r);
      float scale = op.input_scale;
      int32_t zero = op.input_zero_point;
      if (!op.static_input) {
        float low, high;
        rows.finite[index] = gemm.range(x, op.features_in, low, high);
        qparams_of_range(low, high, kInt8, scale, zero);
      }
      char* row = base + r * depth * element;
      rows.sums[index] = gemm.quantize_left(x, op.features_in, scale, zero, row);
      std::memset(row + op.features_in * element, 0, static_cast<size_t>((depth - op.features_in) * element));
      rows.zeros[index] = zero;
      rows.scales[index] = scale;
    }
  });
  return rows;
}

bool in_int8(int64_t value) {
  return value >= kInt8.min && value <= kInt8.max;
}

// The per-column terms of the epilogue: offsets bias + wz[n], sums Σ_k (wq - wz[n]) (modulo
// 2^64, and in int32 when every sum fits there).
struct ColumnTerms {
  std::vector<int64_t> wide_offsets, wide_sums;
  std::vector<int32_t> offsets, sums;
  bool exact_in_int32;
};

ColumnTerms column_terms(const Int8Gemm& gemm, const LinearOperands& op, const PackedWeight& weight) {
  ColumnTerms terms;
  const size_t n = static_cast<size_t>(op.features_out);
  terms.wide_offsets.resize(n), terms.wide_sums.resize(n);
  terms.exact_in_int32 = op.features_in <= kMaxInt32Depth && (!op.static_input || in_int8(op.input_zero_point));
  for (size_t j = 0; j < n; ++j) {
    const int64_t zero = op.weight_zero_points[j];
    terms.exact_in_int32 = terms.exact_in_int32 && in_int8(zero);
    terms.wide_offsets[j] = int64_t{gemm.panel_bias} + zero;
    terms.wide_sums[j] = static_cast<int64_t>(static_cast<uint64_t>(weight.sums[j]) -
                                              static_cast<uint64_t>(op.features_in) * static_cast<uint64_t>(zero));
  }
  if (terms.exact_in_int32) {
    terms.offsets.assign(terms.wide_offsets.begin(), terms.wide_offsets.end());
    terms.sums.assign(terms.wide_sums.begin(), terms.wide_sums.end());
  }
  return terms;
}

Status linear_gemm(const KernelContext& context, const LinearOperands& op) {
  const Int8Gemm& gemm = int8_gemm();
  std::shared_ptr<const PackedWeight> packed;
  const auto* prepared = static_cast<const PackedWeight*>(context.prepared);
  const bool usable = prepared && prepared->isa == gemm.isa && prepared->features_out == op.features_out &&
                      prepared->features_in == op.features_in;
  if (!usable) packed = pack_weight(op.weight, op.features_out, op.features_in);
  const PackedWeight& weight = usable ? *prepared : *packed;
  const int64_t depth = padded_depth(op.features_in);
  const QuantizedRows rows = quantize_rows(gemm, op, depth);
  if (std::find(rows.finite.begin(), rows.finite.end(), 0) != rows.finite.end()) {
    return invalid(context, "input holds a non-finite value");
  }
  const ColumnTerms terms = column_terms(gemm, op, weight);
  Epilogue epilogue;
  epilogue.row_sums = rows.sums.data(), epilogue.row_zeros = rows.zeros.data();
  epilogue.row_scales = rows.scales.data();
  epilogue.column_offsets = terms.offsets.data(), epilogue.column_sums = terms.sums.data();
  epilogue.wide_column_offsets = terms.wide_offsets.data(), epilogue.wide_column_sums = terms.wide_sums.data();
  epilogue.column_scales = op.weight_scales, epilogue.column_bias = op.bias;
  epilogue.exact_in_int32 = terms.exact_in_int32, epilogue.relu = op.relu;
  epilogue.out = op.out, epilogue.out_stride = op.features_out;
  const Product product{rows.storage.get(), depth, op.rows, weight.panels.data(), op.features_out, depth, epilogue};
  multiply_parallel(gemm, product);
  return Status::success();
}

// ------------------------------------------------------------------- rows beyond the GEMM's depth

// out[r, n] from the exact sum of row r and channel n.
void finish_output(const LinearOperands& op, int64_t r, int64_t n, int64_t sum, float x_scale) {
  float v = static_cast<float>(sum) * (x_scale * op.weight_scales[n]);
  if (op.bias) v += op.bias[n];
  if (op.relu) v = v > 0.0f ? v : 0.0f;
  op.out[r * op.features_out + n] = v;
}

// Any int32 zero point and any length: the sums in int64 (modulo 2^64), one row at a time.
Status linear_int64(const KernelContext& context, const LinearOperands& op) {
  for (int64_t i = 0; i < op.rows * op.features_in && !op.static_input; ++i) {  // per-row qparams need finite rows
    if (!std::isfinite(op.x[i])) return invalid(context, "input holds a non-finite value");
  }
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, op.features_in * op.features_out));
  edgert::parallel_for(0, op.rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> xq(static_cast<size_t>(op.features_in));
    for (int64_t r = begin; r < end; ++r) {
      const float* xr = op.x + r * op.features_in;
      float x_scale = op.input_scale;
      int32_t x_zero = op.input_zero_point;
      if (!op.static_input) choose_qparams(xr, op.features_in, kInt8, x_scale, x_zero);
      for (int64_t k = 0; k < op.features_in; ++k) {
        xq[static_cast<size_t>(k)] = int64_t{quantize_value(xr[k], x_scale, x_zero, kInt8)} - x_zero;
      }
      for (int64_t n = 0; n < op.features_out; ++n) {
        const int8_t* wr = op.weight + n * op.features_in;
        const int64_t zero = op.weight_zero_points[n];
        uint64_t sum = 0;
        for (int64_t k = 0; k < op.features_in; ++k) {
          sum += static_cast<uint64_t>(xq[static_cast<size_t>(k)]) * static_cast<uint64_t>(wr[k] - zero);
        }
        finish_output(op, r, n, static_cast<int64_t>(sum), x_scale);
      }
    }
  });
  return Status::success();
}

// ------------------------------------------------------------------- the kernel

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
// the sum exact, then the activation (attribute "none" or "relu").
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
  EDGERT_RETURN_IF_ERROR(
      read_channel_qparams(context, context.inputs[2], context.inputs[3], features_out, scales, zero_points));
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
  LinearOperands operands{cx.data_as<float>(),
                          cw.data_as<int8_t>(),
                          scales.data_as<float>(),
                          zero_points.data_as<int32_t>(),
                          bias ? bias_data.data_as<float>() : nullptr,
                          out.data_as<float>(),
                          rows,
                          features_in,
                          features_out,
                          false,
                          false,
                          1.0f,
                          0};
  EDGERT_RETURN_IF_ERROR(read_linear_options(context, operands));
  if (rows > 0) {  // with no output column the rows are still checked
    EDGERT_RETURN_IF_ERROR(features_in <= kMaxDepth ? linear_gemm(context, operands) : linear_int64(context, operands));
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_PREPARED_OPERATOR("edgert_quantized::linear", linear_kernel, prepare_linear);
EDGERT_OPERATOR_ATTRIBUTES("edgert_quantized::linear", {{"activation", edgert::AttributeKind::String}});

}  // namespace edgert_quantized
