// The activation a float conv2d or linear applies to each output after its bias (attribute
// `activation`, docs/operators.md): the arithmetic of the separate operator, so a fused
// activation gives the same bytes as the unfused node.
#pragma once

#include <cstdint>

#include "common.hpp"
#include "linear.hpp"

namespace edgert::kernels {

// The attribute `activation`: "none" (default), "relu", "clamp" (bounds `activation_min`
// and `activation_max`, each optional, read as clamp reads `min` and `max`), "hardswish",
// "hardsigmoid", "silu" or "sigmoid".
Status read_activation(const KernelContext& context, FusedActivation& activation);

// data[i] = activation(data[i]) for i < count, vectorized (math.cpp).
void apply_activation(const FusedActivation& activation, float* data, int64_t count);

}  // namespace edgert::kernels
