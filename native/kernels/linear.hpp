// The linear kernel's arithmetic, shared with the CPU delegate so a fused linear+relu runs
// the exact same accumulation order as edgert::linear followed by edgert::relu.
#pragma once

#include "edgert/export.h"
#include "edgert/status.hpp"
#include "edgert/tensor.hpp"

namespace edgert::kernels {

enum class Activation { None, Relu };

// output = activation(input · weightᵀ + bias); input [..., K], weight [N, K], bias [N] or
// null. Each output element is summed over k in order, then the bias is added, then the
// activation applied. Output tiles are split across the thread pool; results do not depend
// on the number of threads or on the instruction set the kernels run (docs/kernels.md).
EDGERT_COMPONENT_API edgert::Status linear(const edgert::Tensor& input,
                                           const edgert::Tensor& weight,
                                           const edgert::Tensor* bias, Activation activation,
                                           edgert::Tensor& output);

// The relu applied by both edgert::relu and the fused path.
inline float relu(float value) { return value > 0.0f ? value : 0.0f; }

}  // namespace edgert::kernels
