// The activation a float conv2d or linear applies to each output after its bias (attribute
// `activation`, docs/operators.md): the arithmetic of the separate operator, so a fused
// activation gives the same bytes as the unfused node.
#pragma once

#include <cstdint>
#include <type_traits>

#include "common.hpp"
#include "linear.hpp"
#include "simd.hpp"

namespace edgert::kernels {

// hardswish and hardsigmoid on one vector: the formulas of edgert::hardswish and
// edgert::hardsigmoid (math.cpp runs these same functions).
template <class V>
EDGERT_SIMD_INLINE V hardsigmoid_vector(const V& x) {
  return simd::minimum(simd::maximum(x + 3.0f, V{}), simd::splat<V>(6.0f)) / 6.0f;
}

template <class V>
EDGERT_SIMD_INLINE V hardswish_vector(const V& x) {
  return x * simd::minimum(simd::maximum(x + 3.0f, V{}), simd::splat<V>(6.0f)) / 6.0f;
}

// Activation K on one vector, with clamp's bounds `low` and `high`: the vector code of the
// operator of that name.
template <Activation K, class V>
EDGERT_SIMD_INLINE V activate(const V& x, float low, float high) {
  if constexpr (K == Activation::Relu)
    return simd::select(x > V{}, x, V{});  // NaN and -0 give +0, as relu()
  else if constexpr (K == Activation::Clamp)
    return simd::minimum(simd::maximum(x, simd::splat<V>(low)), simd::splat<V>(high));
  else if constexpr (K == Activation::Hardswish)
    return hardswish_vector(x);
  else if constexpr (K == Activation::Hardsigmoid)
    return hardsigmoid_vector(x);
  else if constexpr (K == Activation::Silu)
    return simd::silu(x);
  else if constexpr (K == Activation::Sigmoid)
    return simd::sigmoid(x);
  else
    return x;
}

// body(std::integral_constant<Activation, K>{}) for the K of `kind`: loops instantiated per
// activation, no switch per vector.
template <class Body>
void with_activation(Activation kind, Body&& body) {
  switch (kind) {
    case Activation::None: return body(std::integral_constant<Activation, Activation::None>{});
    case Activation::Relu: return body(std::integral_constant<Activation, Activation::Relu>{});
    case Activation::Clamp: return body(std::integral_constant<Activation, Activation::Clamp>{});
    case Activation::Hardswish: return body(std::integral_constant<Activation, Activation::Hardswish>{});
    case Activation::Hardsigmoid: return body(std::integral_constant<Activation, Activation::Hardsigmoid>{});
    case Activation::Silu: return body(std::integral_constant<Activation, Activation::Silu>{});
    case Activation::Sigmoid: return body(std::integral_constant<Activation, Activation::Sigmoid>{});
  }
}

// The attribute `activation`: "none" (default), "relu", "clamp" (bounds `activation_min`
// and `activation_max`, each optional, read as clamp reads `min` and `max`), "hardswish",
// "hardsigmoid", "silu" or "sigmoid".
Status read_activation(const KernelContext& context, FusedActivation& activation);

// data[i] = activation(data[i]) for i < count, vectorized (math.cpp).
void apply_activation(const FusedActivation& activation, float* data, int64_t count);

}  // namespace edgert::kernels
