// matmul (batched, numpy semantics) and linear (x·Wᵀ + b).
//
// Every output element is accumulated over k in increasing order in one float, and the
// thread pool splits only whole output rows, so results are identical for any thread count.
#include "common.hpp"
#include "edgert/threadpool.h"
#include "linear.hpp"

namespace edgert::kernels {

Status linear(const Tensor& input, const Tensor& weight, const Tensor* bias, Activation activation,
              Tensor& output) {
  const KernelContext context;
  EDGERT_RETURN_IF_ERROR(check_dtype(context, input, DType::Float32, "input"));
  EDGERT_RETURN_IF_ERROR(check_dtype(context, weight, DType::Float32, "weight"));
  if (input.dim() < 1 || weight.dim() != 2 || input.shape().back() != weight.shape()[1]) {
    return invalid(context, "input " + shape_text(input.shape()) + " and weight " +
                                shape_text(weight.shape()) + " do not match (input [..., K], weight [N, K])");
  }
  const int64_t features_in = weight.shape()[1];
  const int64_t features_out = weight.shape()[0];
  if (bias) {
    EDGERT_RETURN_IF_ERROR(check_dtype(context, *bias, DType::Float32, "bias"));
    if (bias->dim() != 1 || bias->shape()[0] != features_out) {
      return invalid(context, "bias " + shape_text(bias->shape()) + " must be [" +
                                  std::to_string(features_out) + "]");
    }
  }
  std::vector<int64_t> shape = input.shape();
  shape.back() = features_out;
  Tensor out(DType::Float32, shape);
  const int64_t rows = product(shape, 0, shape.size() - 1);
  if (rows > 0 && features_out > 0) {
    const Tensor x = input.contiguous();
    const Tensor w = weight.contiguous();
    const Tensor b = bias ? bias->contiguous() : Tensor();
    const float* xd = x.data_as<float>();
    const float* wd = w.data_as<float>();
    const float* bd = bias ? b.data_as<float>() : nullptr;
    float* od = out.data_as<float>();
    const bool apply_relu = activation == Activation::Relu;
    const int64_t work = std::max<int64_t>(1, features_in * features_out);
    parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / work), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const float* xr = xd + r * features_in;
        float* orow = od + r * features_out;
        int64_t n = 0;
        for (; n + 4 <= features_out; n += 4) {  // four independent sums in flight
          const float* w0 = wd + n * features_in;
          const float* w1 = w0 + features_in;
          const float* w2 = w1 + features_in;
          const float* w3 = w2 + features_in;
          float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
          for (int64_t k = 0; k < features_in; ++k) {
            const float v = xr[k];
            s0 += v * w0[k];
            s1 += v * w1[k];
            s2 += v * w2[k];
            s3 += v * w3[k];
          }
          orow[n] = s0;
          orow[n + 1] = s1;
          orow[n + 2] = s2;
          orow[n + 3] = s3;
        }
        for (; n < features_out; ++n) {
          const float* wr = wd + n * features_in;
          float s = 0.0f;
          for (int64_t k = 0; k < features_in; ++k) s += xr[k] * wr[k];
          orow[n] = s;
        }
        for (n = 0; n < features_out; ++n) {
          float v = orow[n];
          if (bd) v += bd[n];
          orow[n] = apply_relu ? relu(v) : v;
        }
      }
    });
  }
  output = std::move(out);
  return Status::success();
}

namespace {

Status linear_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 3));
  return linear(*context.inputs[0], *context.inputs[1], optional_input(context, 2),
                Activation::None, (*context.outputs)[0]);
}

// A 1-D operand is promoted like numpy: [K] as a row [1, K] (left) or a column [K, 1] (right),
// and the added dimension is dropped from the result.
Status matmul_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 2));
  const Tensor& a = *context.inputs[0];
  const Tensor& b = *context.inputs[1];
  EDGERT_RETURN_IF_ERROR(check_dtype(context, a, DType::Float32, "input 0"));
  EDGERT_RETURN_IF_ERROR(check_dtype(context, b, DType::Float32, "input 1"));
  if (a.dim() < 1 || b.dim() < 1) return invalid(context, "inputs must have at least one dimension");
  std::vector<int64_t> shape_a = a.shape(), shape_b = b.shape();
  if (a.dim() == 1) shape_a.insert(shape_a.begin(), 1);
  if (b.dim() == 1) shape_b.push_back(1);
  const size_t rank_a = shape_a.size(), rank_b = shape_b.size();
  const int64_t m = shape_a[rank_a - 2], k = shape_a[rank_a - 1];
  const int64_t n = shape_b[rank_b - 1];
  if (shape_b[rank_b - 2] != k) {
    return invalid(context, "shapes " + shape_text(a.shape()) + " and " + shape_text(b.shape()) +
                                " do not match for matrix multiplication");
  }
  // Broadcast the batch dimensions through zero-strided "batch tensors" of matrices.
  const Tensor batch_a = Tensor::view(DType::Float32, {shape_a.begin(), shape_a.end() - 2},
                                      Tensor::contiguous_strides({shape_a.begin(), shape_a.end() - 2}),
                                      nullptr, nullptr);
  const Tensor batch_b = Tensor::view(DType::Float32, {shape_b.begin(), shape_b.end() - 2},
                                      Tensor::contiguous_strides({shape_b.begin(), shape_b.end() - 2}),
                                      nullptr, nullptr);
  Broadcast plan;
  EDGERT_RETURN_IF_ERROR(broadcast(context, {&batch_a, &batch_b}, plan));
  std::vector<int64_t> shape = plan.shape;
  if (a.dim() > 1) shape.push_back(m);
  if (b.dim() > 1) shape.push_back(n);
  Tensor out(DType::Float32, shape);
  const int64_t batches = product(plan.shape, 0, plan.shape.size());
  if (batches * m * n > 0) {
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    const float* ad = ca.data_as<float>();
    const float* bd = cb.data_as<float>();
    float* od = out.data_as<float>();
    const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, k * n));
    parallel_for(0, batches * m, grain, [&](int64_t begin, int64_t end) {
      Broadcast rows = plan;  // offsets of whole batch entries, found by treating them as rows
      rows.shape.push_back(1);
      for (auto& strides : rows.strides) strides.push_back(0);
      int64_t offsets[2];
      for (int64_t row = begin; row < end; ++row) {
        const int64_t batch = row / m, i = row % m;
        row_offsets(rows, batch, offsets);
        const float* arow = ad + offsets[0] * m * k + i * k;
        const float* bmat = bd + offsets[1] * k * n;
        float* orow = od + row * n;
        for (int64_t j = 0; j < n; ++j) orow[j] = 0.0f;
        for (int64_t p = 0; p < k; ++p) {
          const float v = arow[p];
          const float* brow = bmat + p * n;
          for (int64_t j = 0; j < n; ++j) orow[j] += v * brow[j];
        }
      }
    });
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::matmul", matmul_kernel);
EDGERT_REGISTER_OPERATOR("edgert::linear", linear_kernel);

}  // namespace edgert::kernels
