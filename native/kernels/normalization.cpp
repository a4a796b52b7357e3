// softmax and layer_norm. Each reduction runs on one thread, in index order.
#include <cmath>

#include "common.hpp"
#include "edgert/threadpool.h"

namespace edgert::kernels {
namespace {

// softmax(x)_i = exp(x_i - max) / Σ_j exp(x_j - max) along `axis` (default -1).
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
    const float* xd = x.data_as<float>();
    float* od = out.data_as<float>();
    parallel_for(0, outer * inner, std::max<int64_t>(1, kParallelGrain / length), [&](int64_t begin, int64_t end) {
      for (int64_t line = begin; line < end; ++line) {
        const int64_t base = (line / inner) * length * inner + line % inner;
        float maximum = xd[base];
        for (int64_t j = 1; j < length; ++j) maximum = std::max(maximum, xd[base + j * inner]);
        float sum = 0.0f;
        for (int64_t j = 0; j < length; ++j) {
          const float e = std::exp(xd[base + j * inner] - maximum);
          od[base + j * inner] = e;
          sum += e;
        }
        for (int64_t j = 0; j < length; ++j) od[base + j * inner] /= sum;
      }
    });
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
