// The unary float32 functions (sigmoid, tanh, silu, hardswish, hardsigmoid, exp, log, sqrt,
// rsqrt, reciprocal, erf, gelu, sin, cos, floor, ceil, round), abs, neg and clamp
// (docs/operators.md).
// Float32 tensors run through simd.hpp's vector loops: contiguous ones in flat chunks split
// across the thread pool, strided ones a row piece at a time gathered into a buffer and run
// through the same loops, so both give the same bytes on every instruction set.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "activation.hpp"
#include "common.hpp"
#include "edgert/graph.hpp"
#include "edgert/threadpool.h"
#include "simd.hpp"

namespace edgert::kernels {
namespace {

enum class Function {
  Sigmoid,
  Tanh,
  Silu,
  Hardswish,
  Hardsigmoid,
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Reciprocal,
  Floor,
  Ceil,
  Round,
  Abs,
  Neg,
  Gelu,
  GeluTanh,
};

// One function on one vector of floats, the formulas of docs/operators.md.
template <Function F, class V>
EDGERT_SIMD_INLINE V apply(const V& x) {
  if constexpr (F == Function::Sigmoid)
    return simd::sigmoid(x);
  else if constexpr (F == Function::Tanh)
    return simd::tanh(x);
  else if constexpr (F == Function::Silu)
    return simd::silu(x);
  else if constexpr (F == Function::Hardswish) {
    return hardswish_vector(x);
  } else if constexpr (F == Function::Hardsigmoid) {
    return hardsigmoid_vector(x);
  } else if constexpr (F == Function::Exp)
    return simd::exp(x);
  else if constexpr (F == Function::Log)
    return simd::log(x);
  else if constexpr (F == Function::Sqrt)
    return simd::sqrt(x);
  else if constexpr (F == Function::Rsqrt)
    return 1.0f / simd::sqrt(x);
  else if constexpr (F == Function::Reciprocal)
    return 1.0f / x;
  else if constexpr (F == Function::Floor)
    return simd::floor(x);
  else if constexpr (F == Function::Ceil)
    return simd::ceil(x);
  else if constexpr (F == Function::Round)
    return simd::round_half_even(x);
  else if constexpr (F == Function::Abs)
    return simd::abs(x);
  else if constexpr (F == Function::Gelu)
    return 0.5f * x * (1.0f + simd::erf(x * 0.70710678118654752f));
  else if constexpr (F == Function::GeluTanh)
    return 0.5f * x * (1.0f + simd::tanh(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  else
    return -x;
}

// Elements per chunk split across threads: about 30 us of work on one core for the
// transcendental functions (a thread wake-up costs more below that), four times as many for
// the operations that are one or two instructions.
template <Function F>
constexpr int64_t grain() {
  constexpr bool cheap = F == Function::Floor || F == Function::Ceil || F == Function::Round || F == Function::Abs ||
                         F == Function::Neg || F == Function::Sqrt || F == Function::Rsqrt ||
                         F == Function::Reciprocal || F == Function::Hardswish || F == Function::Hardsigmoid;
  return cheap ? int64_t{1} << 18 : int64_t{1} << 16;
}

// Elements of a strided row gathered per step (a 4 KiB buffer on the stack).
constexpr int64_t kGatherChunk = 1024;

// out = range over every element of the float32 tensor x, range(in, out, count) working on
// contiguous arrays. Strided rows are gathered into a buffer first.
template <class Range>
Tensor map_floats(const Tensor& x, int64_t chunk_grain, Range range) {
  Tensor out = Tensor::uninitialized(DType::Float32, x.shape());  // every element is written
  const float* in = x.data_as<float>();
  float* data = out.data_as<float>();
  if (x.numel() == 0) return out;
  if (x.is_contiguous()) {
    parallel_for(0, x.numel(), chunk_grain,
                 [&](int64_t begin, int64_t end) { range(in + begin, data + begin, end - begin); });
    return out;
  }
  Broadcast plan;
  plan.shape = x.shape();
  plan.strides = {x.strides()};
  const size_t rank = plan.shape.size();
  const int64_t inner = plan.shape[rank - 1];  // rank >= 1: a scalar is contiguous
  const int64_t stride = plan.strides[0][rank - 1];
  const int64_t rows = x.numel() / inner;
  parallel_for(0, rows, std::max<int64_t>(1, chunk_grain / inner), [&](int64_t begin, int64_t end) {
    float buffer[kGatherChunk];
    for (int64_t r = begin; r < end; ++r) {
      int64_t offset = 0;
      row_offsets(plan, r, &offset);
      for (int64_t first = 0; first < inner; first += kGatherChunk) {
        const int64_t count = std::min(kGatherChunk, inner - first);
        const float* source = in + offset + first * stride;
        for (int64_t i = 0; i < count; ++i) buffer[i] = source[i * stride];
        range(buffer, data + r * inner + first, count);
      }
    }
  });
  return out;
}

// out[i] = fn(x[i]) for an integer tensor of any layout.
template <class T, class Fn>
Tensor map_integers(const Tensor& x, Fn fn) {
  Tensor out = Tensor::uninitialized(x.dtype(), x.shape());  // every element is written
  if (x.numel() == 0) return out;
  const Tensor source = x.contiguous();
  const T* in = source.data_as<T>();
  T* data = out.data_as<T>();
  parallel_for(0, x.numel(), kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) data[i] = fn(in[i]);
  });
  return out;
}

template <Function F>
Tensor map_function(const Tensor& x) {
  return map_floats(x, grain<F>(), [](const float* in, float* out, int64_t count) {
    simd::map(in, out, count, [](const auto& v) { return apply<F>(v); });
  });
}

Status float_input(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  return check_dtype(context, *context.inputs[0], DType::Float32, "input");
}

template <Function F>
Status float_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(float_input(context));
  (*context.outputs)[0] = map_function<F>(*context.inputs[0]);
  return Status::success();
}

// erf is std::erf, element by element (the same code on every instruction set; within 1 ulp).
Status erf_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(float_input(context));
  (*context.outputs)[0] =
      map_floats(*context.inputs[0], int64_t{1} << 15, [](const float* in, float* out, int64_t count) {
        for (int64_t i = 0; i < count; ++i) out[i] = std::erf(in[i]);
      });
  return Status::success();
}

// approximate = "none": 0.5·x·(1 + erf(x/√2)); "tanh": 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))),
// with simd.hpp's erf and tanh (vectorized: erf within 2.5 ulp of the exact value, where
// 1 + erf(x/√2) itself loses more for negative x, as it does with std::erf).
Status gelu_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(float_input(context));
  const std::string approximate = context.attributes ? context.attributes->get_string("approximate", "none") : "none";
  if (approximate == "none") {
    (*context.outputs)[0] = map_function<Function::Gelu>(*context.inputs[0]);
  } else if (approximate == "tanh") {
    (*context.outputs)[0] = map_function<Function::GeluTanh>(*context.inputs[0]);
  } else {
    return invalid(context, "attribute approximate must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  }
  return Status::success();
}

// sin and cos are std::sin and std::cos, element by element (the same code on every
// instruction set; rotary position embeddings compute their tables with them).
template <bool Sine>
Status trigonometric_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(float_input(context));
  (*context.outputs)[0] =
      map_floats(*context.inputs[0], int64_t{1} << 15, [](const float* in, float* out, int64_t count) {
        for (int64_t i = 0; i < count; ++i) out[i] = Sine ? std::sin(in[i]) : std::cos(in[i]);
      });
  return Status::success();
}

Status unsupported_dtype(const KernelContext& context, DType dtype) {
  return invalid(context, std::string("dtype ") + dtype_name(dtype) + " is not supported (float32, int32, int64)");
}

// Integers wrap around: abs and neg of the most negative value give that value (as torch).
template <class T>
T negate(T value) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U(0) - static_cast<U>(value));
}

template <Function F>
Status sign_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& x = *context.inputs[0];
  Tensor& out = (*context.outputs)[0];
  constexpr bool is_abs = F == Function::Abs;
  switch (x.dtype()) {
    case DType::Float32: out = map_function<F>(x); break;
    case DType::Int32:
      out = map_integers<int32_t>(x, [](int32_t v) { return is_abs && v >= 0 ? v : negate(v); });
      break;
    case DType::Int64:
      out = map_integers<int64_t>(x, [](int64_t v) { return is_abs && v >= 0 ? v : negate(v); });
      break;
    default: return unsupported_dtype(context, x.dtype());
  }
  return Status::success();
}

// ---------------------------------------------------------------- clamp

// One bound of clamp: absent, an integer attribute (kept exact for integer tensors) or a float.
struct Bound {
  bool present = false;
  bool integral = false;
  int64_t integer = 0;
  double real = 0.0;
};

Status read_bound(const KernelContext& context, const char* name, Bound& bound) {
  if (!context.attributes || !context.attributes->has(name)) return Status::success();
  const AttributeValue& value = context.attributes->all().at(name);
  bound.present = true;
  if (const int64_t* integer = std::get_if<int64_t>(&value)) {
    bound.integral = true;
    bound.integer = *integer;
    bound.real = static_cast<double>(*integer);
  } else if (const double* real = std::get_if<double>(&value)) {
    if (std::isnan(*real)) return invalid(context, std::string("attribute ") + name + " is NaN");
    bound.real = *real;
  } else {
    return invalid(context, std::string("attribute ") + name + " must be a number");
  }
  return Status::success();
}

// A double as the nearest float, without the undefined conversion of values past float's
// range: those below FLT_MAX + half an ulp round to FLT_MAX, the others are infinite.
float to_float(double value) {
  if (std::fabs(value) < 0x1.ffffffp127) return static_cast<float>(value);
  return value > 0 ? std::numeric_limits<float>::infinity() : -std::numeric_limits<float>::infinity();
}

float float_bound(const Bound& bound, float absent) {
  if (!bound.present) return absent;
  return bound.integral ? static_cast<float>(bound.integer) : to_float(bound.real);
}

// An integer bound for T: a float rounded toward the inside of [min, max] (up for the lower
// bound, down for the upper), then saturated to T's range.
template <class T>
T integer_bound(const Bound& bound, bool lower) {
  using Limits = std::numeric_limits<T>;
  if (!bound.present) return lower ? Limits::min() : Limits::max();
  int64_t value = bound.integer;
  if (!bound.integral) {
    const double rounded = lower ? std::ceil(bound.real) : std::floor(bound.real);
    if (rounded >= 0x1p63)
      value = std::numeric_limits<int64_t>::max();
    else if (rounded < -0x1p63)
      value = std::numeric_limits<int64_t>::min();
    else
      value = static_cast<int64_t>(rounded);
  }
  value = std::min<int64_t>(std::max<int64_t>(value, Limits::min()), Limits::max());
  return static_cast<T>(value);
}

template <class T>
Tensor clamp_integers(const Tensor& x, const Bound& lower, const Bound& upper) {
  const T low = integer_bound<T>(lower, true), high = integer_bound<T>(upper, false);
  return map_integers<T>(x, [low, high](T v) { return std::min(std::max(v, low), high); });
}

// min(max(x, min), max): a NaN stays NaN, min > max gives max everywhere.
Tensor clamp_floats(const Tensor& x, const Bound& lower, const Bound& upper) {
  const float low = float_bound(lower, -std::numeric_limits<float>::infinity());
  const float high = float_bound(upper, std::numeric_limits<float>::infinity());
  return map_floats(x, int64_t{1} << 18, [low, high](const float* in, float* out, int64_t count) {
    simd::map(in, out, count, [low, high](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      return simd::minimum(simd::maximum(v, simd::splat<V>(low)), simd::splat<V>(high));
    });
  });
}

Status clamp_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& x = *context.inputs[0];
  Bound lower, upper;
  EDGERT_RETURN_IF_ERROR(read_bound(context, "min", lower));
  EDGERT_RETURN_IF_ERROR(read_bound(context, "max", upper));
  Tensor& out = (*context.outputs)[0];
  switch (x.dtype()) {
    case DType::Float32: out = clamp_floats(x, lower, upper); break;
    case DType::Int32: out = clamp_integers<int32_t>(x, lower, upper); break;
    case DType::Int64: out = clamp_integers<int64_t>(x, lower, upper); break;
    default: return unsupported_dtype(context, x.dtype());
  }
  return Status::success();
}

}  // namespace

// ---------------------------------------------------------------- fused activations

Status read_activation(const KernelContext& context, FusedActivation& activation) {
  const std::string name = context.attributes ? context.attributes->get_string("activation", "none") : "none";
  static const std::pair<const char*, Activation> kNames[] = {{"none", Activation::None},
                                                              {"relu", Activation::Relu},
                                                              {"clamp", Activation::Clamp},
                                                              {"hardswish", Activation::Hardswish},
                                                              {"hardsigmoid", Activation::Hardsigmoid},
                                                              {"silu", Activation::Silu},
                                                              {"sigmoid", Activation::Sigmoid}};
  activation = FusedActivation();
  bool known = false;
  for (const auto& [text, kind] : kNames) {
    if (name == text) activation.kind = kind, known = true;
  }
  if (!known) {
    return invalid(context,
                   "attribute activation must be one of none, relu, clamp, hardswish, hardsigmoid, silu, "
                   "sigmoid; got \"" +
                       name + "\"");
  }
  if (activation.kind != Activation::Clamp) return Status::success();
  Bound lower, upper;  // read as clamp reads its min and max
  EDGERT_RETURN_IF_ERROR(read_bound(context, "activation_min", lower));
  EDGERT_RETURN_IF_ERROR(read_bound(context, "activation_max", upper));
  activation.min = float_bound(lower, -std::numeric_limits<float>::infinity());
  activation.max = float_bound(upper, std::numeric_limits<float>::infinity());
  return Status::success();
}

// The same vector code as the operators relu, clamp, hardswish, hardsigmoid, silu and
// sigmoid, so a fused activation gives the bytes of the separate node.
void apply_activation(const FusedActivation& activation, float* data, int64_t count) {
  if (activation.kind == Activation::None) return;
  const float low = activation.min, high = activation.max;
  with_activation(activation.kind, [&](auto kind) {
    simd::map(data, data, count, [low, high](const auto& v) { return activate<decltype(kind)::value>(v, low, high); });
  });
}

EDGERT_REGISTER_OPERATOR("edgert::sigmoid", float_kernel<Function::Sigmoid>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::sigmoid");
EDGERT_REGISTER_OPERATOR("edgert::tanh", float_kernel<Function::Tanh>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::tanh");
EDGERT_REGISTER_OPERATOR("edgert::silu", float_kernel<Function::Silu>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::silu");
EDGERT_REGISTER_OPERATOR("edgert::hardswish", float_kernel<Function::Hardswish>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::hardswish");
EDGERT_REGISTER_OPERATOR("edgert::hardsigmoid", float_kernel<Function::Hardsigmoid>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::hardsigmoid");
EDGERT_REGISTER_OPERATOR("edgert::exp", float_kernel<Function::Exp>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::exp");
EDGERT_REGISTER_OPERATOR("edgert::log", float_kernel<Function::Log>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::log");
EDGERT_REGISTER_OPERATOR("edgert::sqrt", float_kernel<Function::Sqrt>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::sqrt");
EDGERT_REGISTER_OPERATOR("edgert::rsqrt", float_kernel<Function::Rsqrt>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::rsqrt");
EDGERT_REGISTER_OPERATOR("edgert::reciprocal", float_kernel<Function::Reciprocal>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::reciprocal");
EDGERT_REGISTER_OPERATOR("edgert::erf", erf_kernel);
EDGERT_REGISTER_OPERATOR("edgert::gelu", gelu_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::gelu", {{"approximate", AttributeKind::String}});
EDGERT_OPERATOR_ATTRIBUTES("edgert::erf");
EDGERT_REGISTER_OPERATOR("edgert::sin", trigonometric_kernel<true>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::sin");
EDGERT_REGISTER_OPERATOR("edgert::cos", trigonometric_kernel<false>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::cos");
EDGERT_REGISTER_OPERATOR("edgert::floor", float_kernel<Function::Floor>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::floor");
EDGERT_REGISTER_OPERATOR("edgert::ceil", float_kernel<Function::Ceil>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::ceil");
EDGERT_REGISTER_OPERATOR("edgert::round", float_kernel<Function::Round>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::round");
EDGERT_REGISTER_OPERATOR("edgert::abs", sign_kernel<Function::Abs>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::abs");
EDGERT_REGISTER_OPERATOR("edgert::neg", sign_kernel<Function::Neg>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::neg");
EDGERT_REGISTER_OPERATOR("edgert::clamp", clamp_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::clamp", {{"min", AttributeKind::Float}, {"max", AttributeKind::Float}});

}  // namespace edgert::kernels
