// softmax and layer_norm. Each reduction runs on one thread, in index order (softmax's
// maximum excepted: its order cannot change the result).
#include <cmath>

#include "common.hpp"
#include "edgert/threadpool.h"
#include "vector_math.hpp"

namespace edgert::kernels {
namespace {

// Lines of softmax whose elements are contiguous (axis -1), a few rows at a time: their
// in-order sums run side by side (sum_rows_in_order).
void softmax_rows(const float* x, float* out, int64_t rows, int64_t length) {
  constexpr int64_t kRows = 4;
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / length), [&](int64_t begin, int64_t end) {
    for (int64_t first = begin; first < end; first += kRows) {
      const int64_t count = std::min(kRows, end - first);
      for (int64_t row = first; row < first + count; ++row) {
        const float maximum = max_of_floats(x + row * length, length);
        exp_of_differences(x + row * length, &maximum, 0, out + row * length, length);
      }
      float sums[kRows];
      sum_rows_in_order(out + first * length, length, count, length, sums);
      for (int64_t i = 0; i < count; ++i) {
        float* row = out + (first + i) * length;
        binary_floats(BinaryOp::Div, row, 1, &sums[i], 0, row, length);
      }
    }
  });
}

// Lines along another axis: `inner` neighbouring lines side by side, element j of line i at
// j * inner + i, so each step runs across the lines (every line still reduced in order).
void softmax_columns(const float* x, float* out, int64_t outer, int64_t length, int64_t inner) {
  constexpr int64_t kLines = 256;  // lines handled together: their maxima and sums stay in L1
  const int64_t groups = (inner + kLines - 1) / kLines;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / (length * std::min(inner, kLines)));
  parallel_for(0, outer * groups, grain, [&](int64_t begin, int64_t end) {
    float maxima[kLines], sums[kLines];
    for (int64_t group = begin; group < end; ++group) {
      const int64_t first = (group % groups) * kLines;
      const int64_t lines = std::min(kLines, inner - first);
      const int64_t base = (group / groups) * length * inner + first;
      std::copy(x + base, x + base + lines, maxima);
      for (int64_t j = 1; j < length; ++j) {
        binary_floats(BinaryOp::Max, maxima, 1, x + base + j * inner, 1, maxima, lines);
      }
      std::fill(sums, sums + lines, 0.0f);
      for (int64_t j = 0; j < length; ++j) {
        float* row = out + base + j * inner;
        exp_of_differences(x + base + j * inner, maxima, 1, row, lines);
        binary_floats(BinaryOp::Add, sums, 1, row, 1, sums, lines);
      }
      for (int64_t j = 0; j < length; ++j) {
        float* row = out + base + j * inner;
        binary_floats(BinaryOp::Div, row, 1, sums, 1, row, lines);
      }
    }
  });
}

// softmax(x)_i = exp(x_i - max) / Σ_j exp(x_j - max) along `axis` (default -1), exp being
// exp_nonpositive (vector_math.hpp) and the sum taken in index order.
Status softmax_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_dtype(context, input, DType::Float32, "input"));
  int64_t axis = context.attributes ? context.attributes->get_int("axis", -1) : -1;
  if (!normalize_axis(axis, input.dim())) {
    return invalid(context, "axis is out of range for a tensor of rank " + std::to_string(input.dim()));
  }
  const std::vector<int64_t>& shape = input.shape();
  const int64_t outer = product(shape, 0, static_cast<size_t>(axis));
  const int64_t length = shape[static_cast<size_t>(axis)];
  const int64_t inner = product(shape, static_cast<size_t>(axis) + 1, shape.size());
  Tensor out(DType::Float32, shape);
  if (outer * length * inner > 0) {
    const Tensor x = input.contiguous();
    if (inner == 1) {
      softmax_rows(x.data_as<float>(), out.data_as<float>(), outer, length);
    } else {
      softmax_columns(x.data_as<float>(), out.data_as<float>(), outer, length, inner);
    }
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

Status check_affine(const KernelContext& context, const Tensor* tensor, const char* what,
                    const std::vector<int64_t>& normalized) {
  if (!tensor) return Status::success();
  EDGERT_RETURN_IF_ERROR(check_dtype(context, *tensor, DType::Float32, what));
  if (tensor->shape() != normalized) {
    return invalid(context, std::string(what) + " " + shape_text(tensor->shape()) +
                                " must have the normalized shape " + shape_text(normalized));
  }
  return Status::success();
}

// Normalizes over the dimensions [axis, rank) (default axis -1): mean and variance in double,
// y = (x - mean) / sqrt(var + eps) · weight + bias (weight and bias optional).
Status layer_norm_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 3));
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_dtype(context, input, DType::Float32, "input"));
  int64_t axis = context.attributes ? context.attributes->get_int("axis", -1) : -1;
  const double eps = context.attributes ? context.attributes->get_float("eps", 1e-5) : 1e-5;
  if (!normalize_axis(axis, input.dim())) {
    return invalid(context, "axis is out of range for a tensor of rank " + std::to_string(input.dim()));
  }
  if (!(eps >= 0.0)) return invalid(context, "eps must be non-negative");
  const std::vector<int64_t>& shape = input.shape();
  const std::vector<int64_t> normalized(shape.begin() + axis, shape.end());
  const Tensor* weight = optional_input(context, 1);
  const Tensor* bias = optional_input(context, 2);
  EDGERT_RETURN_IF_ERROR(check_affine(context, weight, "weight", normalized));
  EDGERT_RETURN_IF_ERROR(check_affine(context, bias, "bias", normalized));
  const int64_t outer = product(shape, 0, static_cast<size_t>(axis));
  const int64_t length = product(normalized, 0, normalized.size());
  Tensor out(DType::Float32, shape);
  if (outer * length > 0) {
    const Tensor x = input.contiguous();
    const Tensor w = weight ? weight->contiguous() : Tensor();
    const Tensor b = bias ? bias->contiguous() : Tensor();
    const float* xd = x.data_as<float>();
    const float* wd = weight ? w.data_as<float>() : nullptr;
    const float* bd = bias ? b.data_as<float>() : nullptr;
    float* od = out.data_as<float>();
    parallel_for(0, outer, std::max<int64_t>(1, kParallelGrain / length), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const float* xr = xd + row * length;
        float* orow = od + row * length;
        double sum = 0.0;
        for (int64_t j = 0; j < length; ++j) sum += xr[j];
        const double mean = sum / static_cast<double>(length);
        double squares = 0.0;
        for (int64_t j = 0; j < length; ++j) squares += (xr[j] - mean) * (xr[j] - mean);
        const double scale = 1.0 / std::sqrt(squares / static_cast<double>(length) + eps);
        for (int64_t j = 0; j < length; ++j) {
          float v = static_cast<float>((xr[j] - mean) * scale);
          if (wd) v *= wd[j];
          if (bd) v += bd[j];
          orow[j] = v;
        }
      }
    });
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::softmax", softmax_kernel);
EDGERT_REGISTER_OPERATOR("edgert::layer_norm", layer_norm_kernel);

}  // namespace edgert::kernels
