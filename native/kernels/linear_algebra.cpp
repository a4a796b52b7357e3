// matmul (batched, numpy semantics) and linear (x·Wᵀ + b).
//
// Both run on gemm (gemm.hpp): every output element is accumulated over k in increasing
// order in one float by one thread, so results are identical for any thread count and
// instruction set.
#include "activation.hpp"
#include "common.hpp"
#include "gemm.hpp"
#include "linear.hpp"

namespace edgert::kernels {

namespace {

// The packed weight when it was made for this weight's shape and this process's kernels.
const float* usable_panels(const PackedPanels* packed, int64_t features_out, int64_t features_in) {
  if (packed == nullptr || !fits_right_kernel(*packed)) return nullptr;
  if (packed->extent != features_out || packed->depth != features_in) return nullptr;
  return packed->matrix(0);
}

}  // namespace

Status linear(const Tensor& input, const Tensor& weight, const Tensor* bias, const FusedActivation& activation,
              Tensor& output, const PackedPanels* packed) {
  const KernelContext context;
  EDGERT_RETURN_IF_ERROR(check_dtype(context, input, DType::Float32, "input"));
  EDGERT_RETURN_IF_ERROR(check_dtype(context, weight, DType::Float32, "weight"));
  if (input.dim() < 1 || weight.dim() != 2 || input.shape().back() != weight.shape()[1]) {
    return invalid(context, "input " + shape_text(input.shape()) + " and weight " + shape_text(weight.shape()) +
                                " do not match (input [..., K], weight [N, K])");
  }
  const int64_t features_in = weight.shape()[1];
  const int64_t features_out = weight.shape()[0];
  if (bias) {
    EDGERT_RETURN_IF_ERROR(check_dtype(context, *bias, DType::Float32, "bias"));
    if (bias->dim() != 1 || bias->shape()[0] != features_out) {
      return invalid(context, "bias " + shape_text(bias->shape()) + " must be [" + std::to_string(features_out) + "]");
    }
  }
  std::vector<int64_t> shape = input.shape();
  shape.back() = features_out;
  // gemm writes every element (a sum over no k as +0).
  Tensor out = Tensor::uninitialized(DType::Float32, shape);
  const int64_t rows = product(shape, 0, shape.size() - 1);
  if (rows > 0 && features_out > 0) {
    const Tensor x = input.contiguous();
    const float* panels = usable_panels(packed, features_out, features_in);
    const Tensor w = panels ? Tensor() : weight.contiguous();
    const Tensor b = bias ? bias->contiguous() : Tensor();
    GemmEpilogue epilogue;
    epilogue.bias = bias ? b.data_as<float>() : nullptr;
    epilogue.activation = activation;
    GemmOperands operands{x.data_as<float>(), w.data_as<float>(), out.data_as<float>()};
    operands.packed_b = panels;
    gemm({operands}, rows, features_out, features_in, RightLayout::NByK, epilogue);
  }
  output = std::move(out);
  return Status::success();
}

std::shared_ptr<const PackedPanels> prepare_linear_weight(const Tensor& weight) {
  if (weight.dtype() != DType::Float32 || weight.dim() != 2) return nullptr;
  const Tensor w = weight.contiguous();
  return std::make_shared<const PackedPanels>(
      pack_right_panels(w.data_as<float>(), RightLayout::NByK, w.shape()[0], w.shape()[1]));
}

namespace {

// A constant weight is packed once, here; a weight computed at run time is packed by each
// run.
Status prepare_linear(const PrepareContext& context, std::shared_ptr<const void>& state) {
  const Tensor* weight = context.constants.size() > 1 ? context.constants[1] : nullptr;
  if (weight != nullptr) state = prepare_linear_weight(*weight);
  return Status::success();
}

// Attribute: activation (activation.hpp), applied after the bias.
Status linear_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 3));
  FusedActivation activation;
  EDGERT_RETURN_IF_ERROR(read_activation(context, activation));
  return linear(*context.inputs[0], *context.inputs[1], optional_input(context, 2), activation, (*context.outputs)[0],
                static_cast<const PackedPanels*>(context.prepared));
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
  const Tensor batch_a =
      Tensor::view(DType::Float32, {shape_a.begin(), shape_a.end() - 2},
                   Tensor::contiguous_strides({shape_a.begin(), shape_a.end() - 2}), nullptr, nullptr);
  const Tensor batch_b =
      Tensor::view(DType::Float32, {shape_b.begin(), shape_b.end() - 2},
                   Tensor::contiguous_strides({shape_b.begin(), shape_b.end() - 2}), nullptr, nullptr);
  Broadcast plan;
  EDGERT_RETURN_IF_ERROR(broadcast(context, {&batch_a, &batch_b}, plan));
  std::vector<int64_t> shape = plan.shape;
  if (a.dim() > 1) shape.push_back(m);
  if (b.dim() > 1) shape.push_back(n);
  Tensor out = Tensor::uninitialized(DType::Float32, shape);  // gemm writes every element
  const int64_t batches = product(plan.shape, 0, plan.shape.size());
  if (batches * m * n > 0) {
    const Tensor ca = a.contiguous(), cb = b.contiguous();
    const float* ad = ca.data_as<float>();
    const float* bd = cb.data_as<float>();
    float* od = out.data_as<float>();
    Broadcast entries = plan;  // offsets of whole batch entries, found by treating them as rows
    entries.shape.push_back(1);
    for (auto& strides : entries.strides) strides.push_back(0);
    std::vector<GemmOperands> batch;
    for (int64_t entry = 0; entry < batches; ++entry) {
      int64_t offsets[2];
      row_offsets(entries, entry, offsets);
      batch.push_back({ad + offsets[0] * m * k, bd + offsets[1] * k * n, od + entry * m * n});
    }
    gemm(batch, m, n, k, RightLayout::KByN, GemmEpilogue{});
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::matmul", matmul_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::matmul");
EDGERT_REGISTER_PREPARED_OPERATOR("edgert::linear", linear_kernel, prepare_linear);
EDGERT_OPERATOR_ATTRIBUTES("edgert::linear", {{"activation", AttributeKind::String},
                                              {"activation_min", AttributeKind::Float},
                                              {"activation_max", AttributeKind::Float}});

}  // namespace edgert::kernels
