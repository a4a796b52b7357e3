// The linear kernel's arithmetic, shared with the CPU delegate so a fused linear+relu runs
// the exact same accumulation order as edgert::linear followed by edgert::relu.
#pragma once

#include <limits>
#include <memory>

#include "edgert/export.h"
#include "edgert/status.hpp"
#include "edgert/tensor.hpp"

namespace edgert::kernels {

// The activation a linear or conv2d applies to each output after the bias (attribute
// `activation`, docs/operators.md), with the arithmetic of the operator of that name.
enum class Activation { None, Relu, Clamp, Hardswish, Hardsigmoid, Silu, Sigmoid };

struct FusedActivation {
  Activation kind = Activation::None;
  float min = -std::numeric_limits<float>::infinity();  // Clamp's bounds
  float max = std::numeric_limits<float>::infinity();

  FusedActivation() = default;
  FusedActivation(Activation activation) : kind(activation) {}  // NOLINT: implicit on purpose
};

// A weight packed once into the panels the matrix-product kernels read (gemm.hpp).
struct PackedPanels;

// output = activation(input · weightᵀ + bias); input [..., K], weight [N, K], bias [N] or
// null. Each output element is summed over k in order, then the bias is added, then the
// activation applied. Output tiles are split across the thread pool; results do not depend
// on the number of threads or on the instruction set the kernels run (docs/kernels.md).
// `packed`, when given, is prepare_linear_weight(weight): the product reads it instead of
// packing the weight again (the results are the same bytes).
EDGERT_COMPONENT_API edgert::Status linear(const edgert::Tensor& input, const edgert::Tensor& weight,
                                           const edgert::Tensor* bias, const FusedActivation& activation,
                                           edgert::Tensor& output, const PackedPanels* packed = nullptr);

// A constant weight [N, K] packed for every later linear() call of this process; null when
// it is not a float32 matrix (linear() then reports the error).
EDGERT_COMPONENT_API std::shared_ptr<const PackedPanels> prepare_linear_weight(const edgert::Tensor& weight);

// The relu applied by both edgert::relu and the fused path.
inline float relu(float value) {
  return value > 0.0f ? value : 0.0f;
}

}  // namespace edgert::kernels
