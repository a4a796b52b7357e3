// softmax, log_softmax, layer_norm, rms_norm and batch_norm. Each reduction runs on one
// thread, in index order (the softmaxes' maximum excepted: its order cannot change the
// result).
#include <cmath>
#include <limits>

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
  Tensor out = Tensor::uninitialized(DType::Float32, shape);  // every element is written
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

// log in double, rounded once to float32: the correctly rounded float32 log but for
// near-ties, on every C library (float32 logf implementations differ in the last bit).
float log_of_sum(float sum) {
  return static_cast<float>(std::log(static_cast<double>(sum)));
}

// log_softmax of lines whose elements are contiguous: (x - max) - log(Σ exp(x - max)), the
// exponentials written to `out` first (their in-order sums as softmax_rows), then replaced.
void log_softmax_rows(const float* x, float* out, int64_t rows, int64_t length) {
  constexpr int64_t kRows = 4;
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / length), [&](int64_t begin, int64_t end) {
    for (int64_t first = begin; first < end; first += kRows) {
      const int64_t count = std::min(kRows, end - first);
      float maxima[kRows], sums[kRows];
      for (int64_t i = 0; i < count; ++i) {
        const int64_t row = (first + i) * length;
        maxima[i] = max_of_floats(x + row, length);
        exp_of_differences(x + row, &maxima[i], 0, out + row, length);
      }
      sum_rows_in_order(out + first * length, length, count, length, sums);
      for (int64_t i = 0; i < count; ++i) {
        const int64_t row = (first + i) * length;
        const float log_sum = log_of_sum(sums[i]);
        binary_floats(BinaryOp::Sub, x + row, 1, &maxima[i], 0, out + row, length);
        binary_floats(BinaryOp::Sub, out + row, 1, &log_sum, 0, out + row, length);
      }
    }
  });
}

// log_softmax along another axis: `inner` neighbouring lines side by side (softmax_columns).
void log_softmax_columns(const float* x, float* out, int64_t outer, int64_t length, int64_t inner) {
  constexpr int64_t kLines = 256;
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
      for (int64_t i = 0; i < lines; ++i) sums[i] = log_of_sum(sums[i]);
      for (int64_t j = 0; j < length; ++j) {
        float* row = out + base + j * inner;
        binary_floats(BinaryOp::Sub, x + base + j * inner, 1, maxima, 1, row, lines);
        binary_floats(BinaryOp::Sub, row, 1, sums, 1, row, lines);
      }
    }
  });
}

// log_softmax(x)_i = (x_i - max) - log(Σ_j exp(x_j - max)) along `axis` (default -1), exp
// and the sum as softmax's, the log as log_of_sum.
Status log_softmax_kernel(KernelContext& context) {
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
  Tensor out = Tensor::uninitialized(DType::Float32, shape);
  if (outer * length * inner > 0) {
    const Tensor x = input.contiguous();
    if (inner == 1) {
      log_softmax_rows(x.data_as<float>(), out.data_as<float>(), outer, length);
    } else {
      log_softmax_columns(x.data_as<float>(), out.data_as<float>(), outer, length, inner);
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
    return invalid(context, std::string(what) + " " + shape_text(tensor->shape()) + " must have the normalized shape " +
                                shape_text(normalized));
  }
  return Status::success();
}

// Σ term(x[j]) in double as four partial sums: partial k adds the terms of j = k, k + 4,
// k + 8, ... in index order from +0, and the sum is (s0 + s1) + (s2 + s3). Four independent
// chains of additions instead of one (a double add waits for the one before it); the same
// operations in the same order on every instruction set and pool size.
template <class Term>
double sum_in_quarters(const float* x, int64_t length, Term term) {
  double partial[4] = {0.0, 0.0, 0.0, 0.0};
  int64_t j = 0;
  for (; j + 4 <= length; j += 4) {
    for (int k = 0; k < 4; ++k) partial[k] += term(static_cast<double>(x[j + k]));
  }
  for (int k = 0; j < length; ++j, ++k) partial[k] += term(static_cast<double>(x[j]));
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
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
  Tensor out = Tensor::uninitialized(DType::Float32, shape);  // every element is written
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
        const double mean = sum_in_quarters(xr, length, [](double v) { return v; }) / static_cast<double>(length);
        const double squares = sum_in_quarters(xr, length, [mean](double v) { return (v - mean) * (v - mean); });
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

// The attribute eps (default `fallback`): finite and >= 0.
Status read_eps(const KernelContext& context, double fallback, double& eps) {
  eps = context.attributes ? context.attributes->get_float("eps", fallback) : fallback;
  if (!(eps >= 0.0) || !std::isfinite(eps)) return invalid(context, "eps must be finite and non-negative");
  return Status::success();
}

// One line of rms_norm: scale = 1 / sqrt(Σ x² / n + eps) in double (the squares summed as
// sum_in_quarters says), y = float(x · scale) · weight.
void rms_norm_line(const float* x, const float* weight, int64_t length, double eps, float* out) {
  const double squares = sum_in_quarters(x, length, [](double v) { return v * v; });
  const double scale = 1.0 / std::sqrt(squares / static_cast<double>(length) + eps);
  for (int64_t j = 0; j < length; ++j) {
    const float v = static_cast<float>(x[j] * scale);
    out[j] = weight ? v * weight[j] : v;
  }
}

// Normalizes over the dimensions [axis, rank) (default -1) by the root mean square; eps
// defaults to float32's machine epsilon (torch's default); weight (optional) has the
// normalized shape.
Status rms_norm_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 2));
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_dtype(context, input, DType::Float32, "input"));
  int64_t axis = context.attributes ? context.attributes->get_int("axis", -1) : -1;
  if (!normalize_axis(axis, input.dim())) {
    return invalid(context, "axis is out of range for a tensor of rank " + std::to_string(input.dim()));
  }
  double eps = 0.0;
  EDGERT_RETURN_IF_ERROR(read_eps(context, std::numeric_limits<float>::epsilon(), eps));
  const std::vector<int64_t>& shape = input.shape();
  const std::vector<int64_t> normalized(shape.begin() + axis, shape.end());
  const Tensor* weight = optional_input(context, 1);
  EDGERT_RETURN_IF_ERROR(check_affine(context, weight, "weight", normalized));
  const int64_t outer = product(shape, 0, static_cast<size_t>(axis));
  const int64_t length = product(normalized, 0, normalized.size());
  Tensor out = Tensor::uninitialized(DType::Float32, shape);
  if (outer * length > 0) {
    const Tensor x = input.contiguous();
    const Tensor w = weight ? weight->contiguous() : Tensor();
    const float* xd = x.data_as<float>();
    const float* wd = weight ? w.data_as<float>() : nullptr;
    float* od = out.data_as<float>();
    parallel_for(0, outer, std::max<int64_t>(1, kParallelGrain / length), [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) rms_norm_line(xd + row * length, wd, length, eps, od + row * length);
    });
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// A per-channel input of batch_norm: float32 [C].
Status check_channel_vector(const KernelContext& context, const Tensor* tensor, const char* what, int64_t channels) {
  if (tensor == nullptr) return Status::success();
  EDGERT_RETURN_IF_ERROR(check_dtype(context, *tensor, DType::Float32, what));
  if (tensor->dim() != 1 || tensor->shape()[0] != channels) {
    return invalid(
        context, std::string(what) + " " + shape_text(tensor->shape()) + " must be [" + std::to_string(channels) + "]");
  }
  return Status::success();
}

struct BatchNormChannels {
  std::vector<float> mean, factor, bias;  // bias empty when absent
};

// factor[c] = weight[c] / sqrt(var[c] + eps) (1 / sqrt(...) without weight), in float32.
BatchNormChannels batch_norm_channels(const Tensor* weight, const Tensor* bias, const Tensor& mean, const Tensor& var,
                                      float eps) {
  const int64_t channels = mean.numel();
  const Tensor w = weight ? weight->contiguous() : Tensor(), b = bias ? bias->contiguous() : Tensor();
  const Tensor m = mean.contiguous(), v = var.contiguous();
  BatchNormChannels result;
  result.mean.assign(m.data_as<float>(), m.data_as<float>() + channels);
  for (int64_t c = 0; c < channels; ++c) {
    const float root = std::sqrt(v.data_as<float>()[c] + eps);
    result.factor.push_back((weight ? w.data_as<float>()[c] : 1.0f) / root);
  }
  if (bias) result.bias.assign(b.data_as<float>(), b.data_as<float>() + channels);
  return result;
}

// y = (x - mean[c]) · factor[c] + bias[c] over the `count` elements of one channel, in
// chunks that stay in the L1 cache across the three passes.
void batch_norm_block(const float* x, const BatchNormChannels& channels, int64_t c, int64_t count, float* out) {
  constexpr int64_t kChunk = 2048;
  for (int64_t begin = 0; begin < count; begin += kChunk) {
    const int64_t length = std::min(kChunk, count - begin);
    binary_floats(BinaryOp::Sub, x + begin, 1, &channels.mean[static_cast<size_t>(c)], 0, out + begin, length);
    binary_floats(BinaryOp::Mul, out + begin, 1, &channels.factor[static_cast<size_t>(c)], 0, out + begin, length);
    if (!channels.bias.empty()) {
      binary_floats(BinaryOp::Add, out + begin, 1, &channels.bias[static_cast<size_t>(c)], 0, out + begin, length);
    }
  }
}

// The same for one row of an [N, C] input: y[c] = (x[c] - mean[c]) · factor[c] + bias[c].
void batch_norm_row(const float* x, const BatchNormChannels& channels, int64_t count, float* out) {
  binary_floats(BinaryOp::Sub, x, 1, channels.mean.data(), 1, out, count);
  binary_floats(BinaryOp::Mul, out, 1, channels.factor.data(), 1, out, count);
  if (!channels.bias.empty()) binary_floats(BinaryOp::Add, out, 1, channels.bias.data(), 1, out, count);
}

// Inference batch norm. Inputs: x [N, C, ...], weight [C] (optional), bias [C] (optional),
// mean [C], var [C]; attribute eps (default 1e-5).
Status batch_norm_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 5));
  if (context.inputs.size() != 5 || !context.inputs[3] || !context.inputs[4]) {
    return invalid(context, "expected inputs (x, weight or absent, bias or absent, mean, var)");
  }
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_dtype(context, input, DType::Float32, "input"));
  if (input.dim() < 2) return invalid(context, "input " + shape_text(input.shape()) + " must be [N, C, ...]");
  const int64_t channels = input.shape()[1];
  const Tensor* weight = optional_input(context, 1);
  const Tensor* bias = optional_input(context, 2);
  EDGERT_RETURN_IF_ERROR(check_channel_vector(context, weight, "weight", channels));
  EDGERT_RETURN_IF_ERROR(check_channel_vector(context, bias, "bias", channels));
  EDGERT_RETURN_IF_ERROR(check_channel_vector(context, context.inputs[3], "mean", channels));
  EDGERT_RETURN_IF_ERROR(check_channel_vector(context, context.inputs[4], "var", channels));
  double eps = 0.0;
  EDGERT_RETURN_IF_ERROR(read_eps(context, 1e-5, eps));
  const BatchNormChannels factors =
      batch_norm_channels(weight, bias, *context.inputs[3], *context.inputs[4], static_cast<float>(eps));
  const int64_t inner = product(input.shape(), 2, input.shape().size());
  Tensor out = Tensor::uninitialized(DType::Float32, input.shape());
  if (out.numel() > 0) {
    const Tensor x = input.contiguous();
    const float* xd = x.data_as<float>();
    float* od = out.data_as<float>();
    if (inner == 1) {
      // [N, C] (BatchNorm1d on features or tokens): a row holds one element of every
      // channel, so the three passes run along the row with the channels' vectors; each
      // element gets the same three operations as below.
      parallel_for(0, input.shape()[0], std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, channels)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t row = begin; row < end; ++row) {
                       batch_norm_row(xd + row * channels, factors, channels, od + row * channels);
                     }
                   });
    } else {
      parallel_for(0, input.shape()[0] * channels, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, inner)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t block = begin; block < end; ++block) {
                       batch_norm_block(xd + block * inner, factors, block % channels, inner, od + block * inner);
                     }
                   });
    }
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::softmax", softmax_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::softmax", {{"axis", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::log_softmax", log_softmax_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::log_softmax", {{"axis", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::layer_norm", layer_norm_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::layer_norm", {{"axis", AttributeKind::Int}, {"eps", AttributeKind::Float}});
EDGERT_REGISTER_OPERATOR("edgert::rms_norm", rms_norm_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::rms_norm", {{"axis", AttributeKind::Int}, {"eps", AttributeKind::Float}});
EDGERT_REGISTER_OPERATOR("edgert::batch_norm", batch_norm_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::batch_norm", {{"eps", AttributeKind::Float}});

}  // namespace edgert::kernels
