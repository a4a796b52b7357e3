// Reductions (docs/operators.md): sum, mean, max, min, any and all over `axes`, argmax and
// argmin along one axis or the flattened tensor, and cumsum along one axis. Each output is reduced by one thread in the
// documented order; outputs are split across the thread pool, so results do not depend on
// the pool's size. Float sums keep 8 interleaved float64 partial sums (element r of the
// reduced run goes to partial r mod 8, the partials added in order 0..7, one rounding to
// float32 at the end); those loops are vectorized over the 8 partials (simd.hpp's dispatch),
// lane k holding partial k on every instruction set.
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <variant>

#include "common.hpp"
#include "edgert/graph.hpp"
#include "edgert/threadpool.h"
#include "simd.hpp"

namespace edgert::kernels {
namespace {

// The input seen as [outer, length, inner], contiguous: element (o, r, i) at
// (o·length + r)·inner + i, where r runs over the reduced elements in row-major order.
struct Reduction {
  std::vector<int64_t> output_shape;
  int64_t outer = 1, length = 1, inner = 1;
  Tensor data;
};

// ---------------------------------------------------------------- attributes

Status read_flag(const KernelContext& context, const char* name, bool& flag) {
  flag = false;
  if (!context.attributes || !context.attributes->has(name)) return Status::success();
  const int64_t* value = std::get_if<int64_t>(&context.attributes->all().at(name));
  if (!value || (*value != 0 && *value != 1)) {
    return invalid(context, std::string("attribute ") + name + " must be 0 or 1");
  }
  flag = *value == 1;
  return Status::success();
}

// Resolves a possibly negative axis; a rank-0 tensor takes 0 and -1 (its one element, as torch).
Status resolve_axis(const KernelContext& context, int64_t axis, int64_t rank, int64_t& resolved) {
  resolved = axis < 0 ? axis + std::max<int64_t>(rank, 1) : axis;
  if (resolved < 0 || resolved >= std::max<int64_t>(rank, 1)) {
    return invalid(context,
                   "axis " + std::to_string(axis) + " is out of range for a tensor of rank " + std::to_string(rank));
  }
  return Status::success();
}

// Which dimensions `axes` reduces: absent or empty means all of them; repeats are errors.
Status read_axes(const KernelContext& context, int64_t rank, std::vector<bool>& reduced) {
  reduced.assign(static_cast<size_t>(rank), true);
  if (!context.attributes || !context.attributes->has("axes")) return Status::success();
  const auto* axes = std::get_if<std::vector<int64_t>>(&context.attributes->all().at("axes"));
  if (!axes) return invalid(context, "attribute axes must be a list of ints");
  if (axes->empty() || rank == 0) {
    for (int64_t axis : *axes) {
      int64_t resolved = 0;
      EDGERT_RETURN_IF_ERROR(resolve_axis(context, axis, rank, resolved));
    }
    return Status::success();
  }
  reduced.assign(static_cast<size_t>(rank), false);
  for (int64_t axis : *axes) {
    int64_t resolved = 0;
    EDGERT_RETURN_IF_ERROR(resolve_axis(context, axis, rank, resolved));
    if (reduced[static_cast<size_t>(resolved)]) {
      return invalid(context, "axis " + std::to_string(axis) + " appears more than once in axes");
    }
    reduced[static_cast<size_t>(resolved)] = true;
  }
  return Status::success();
}

// ---------------------------------------------------------------- layout

// Whether the reduced dimensions are one block of neighbours (dimensions of size 1 inside
// the block do not count): then the input's own row-major order is the reduction's.
bool reduced_block(const std::vector<int64_t>& shape, const std::vector<bool>& reduced, size_t& first, size_t& last) {
  first = shape.size(), last = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d]) continue;
    first = std::min(first, d);
    last = d;
  }
  for (size_t d = first; d <= last && d < shape.size(); ++d) {
    if (!reduced[d] && shape[d] != 1) return false;
  }
  return true;
}

// A contiguous copy of x with the kept dimensions first and the reduced ones last.
Tensor reduced_last(const Tensor& x, const std::vector<bool>& reduced) {
  std::vector<int64_t> shape, strides;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t d = 0; d < x.shape().size(); ++d) {
      if (reduced[d] != (pass == 1)) continue;
      shape.push_back(x.shape()[d]);
      strides.push_back(x.strides()[d]);
    }
  }
  Tensor copy(x.dtype(), shape);
  copy_strided(dtype_size(x.dtype()), shape, static_cast<const char*>(x.data()), strides,
               static_cast<char*>(copy.data()), Tensor::contiguous_strides(shape));
  return copy;
}

Reduction plan_reduction(const Tensor& x, const std::vector<bool>& reduced, bool keepdim) {
  Reduction plan;
  const std::vector<int64_t>& shape = x.shape();
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!reduced[d])
      plan.output_shape.push_back(shape[d]);
    else if (keepdim)
      plan.output_shape.push_back(1);
  }
  size_t first = 0, last = 0;
  if (shape.empty()) {
    plan.data = x.contiguous();
  } else if (reduced_block(shape, reduced, first, last)) {
    plan.data = x.contiguous();
    plan.outer = product(shape, 0, first);
    plan.length = product(shape, first, last + 1);
    plan.inner = product(shape, last + 1, shape.size());
  } else {
    plan.data = reduced_last(x, reduced);
    plan.length = 1;
    for (size_t d = 0; d < shape.size(); ++d) (reduced[d] ? plan.length : plan.outer) *= shape[d];
  }
  return plan;
}

// Calls line(o, i) for every output (o, i) of the plan, spread across threads.
template <class Line>
void for_each_line(const Reduction& plan, Line line) {
  const int64_t outputs = plan.outer * plan.inner;
  parallel_for(0, outputs, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(plan.length, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t n = begin; n < end; ++n) line(n / plan.inner, n % plan.inner);
               });
}

// ---------------------------------------------------------------- float sums

typedef double Partials __attribute__((vector_size(64)));  // partial k in lane k
typedef float Octet __attribute__((vector_size(32)));

// `Doubles` doubles of partials per register, and as many floats converted into them.
template <int Doubles>
struct RunPartials;
template <>
struct RunPartials<8> {
  typedef double Doubles __attribute__((vector_size(64)));
  typedef float Floats __attribute__((vector_size(32)));
};
template <>
struct RunPartials<4> {
  typedef double Doubles __attribute__((vector_size(32)));
  typedef float Floats __attribute__((vector_size(16)));
};
template <>
struct RunPartials<2> {
  typedef double Doubles __attribute__((vector_size(16)));
  typedef float Floats __attribute__((vector_size(8)));
};

// The partials of one contiguous run of floats, added in order 0..7. The eight partials are
// held as registers of the dispatched width (one zmm, two ymm or four xmm of doubles): a
// 64-byte vector in an AVX2 or SSE function lived on the stack, each addition a store and a
// reload. The same additions, lane for lane.
double sum_run(const float* x, int64_t count) {
  double total = 0.0;
  simd::dispatch([&](auto width) {
    constexpr int kDoubles = decltype(width)::lanes / 2;  // per register
    constexpr int kRegisters = 8 / kDoubles;
    using Doubles = typename RunPartials<kDoubles>::Doubles;
    using Floats = typename RunPartials<kDoubles>::Floats;
    Doubles partials[kRegisters] = {};
    int64_t r = 0;
    for (; r + 8 <= count; r += 8) {
      for (int v = 0; v < kRegisters; ++v) {
        Floats values;
        std::memcpy(&values, x + r + v * kDoubles, sizeof(values));
        partials[v] += __builtin_convertvector(values, Doubles);
      }
    }
    for (; r < count; ++r) partials[(r & 7) / kDoubles][(r & 7) % kDoubles] += static_cast<double>(x[r]);
    total = partials[0][0];
    for (int k = 1; k < 8; ++k) total += partials[k / kDoubles][k % kDoubles];
  });
  return total;
}

// Columns processed side by side when the reduced elements are `inner` apart: 8 partials of
// kColumns doubles each (16 KiB) stay in L1.
constexpr int64_t kColumns = 256;

// The sums of `columns` neighbouring columns of a [length, inner] block, each with its own 8
// partials (the same order as sum_run; lane j of a vector is column j).
void sum_columns(const float* x, int64_t length, int64_t inner, int64_t columns, double* sums) {
  simd::dispatch([&](auto) {
    Partials partials[8][kColumns / 8] = {};
    const int64_t vectors = (columns + 7) / 8;
    for (int64_t r = 0; r < length; ++r) {
      const float* row = x + r * inner;
      Partials* target = partials[r & 7];
      for (int64_t v = 0; v < vectors; ++v) {
        float values[8] = {};
        std::memcpy(values, row + v * 8, static_cast<size_t>(std::min<int64_t>(8, columns - v * 8)) * sizeof(float));
        Octet octet;
        std::memcpy(&octet, values, sizeof(octet));
        target[v] += __builtin_convertvector(octet, Partials);
      }
    }
    for (int64_t j = 0; j < columns; ++j) {
      double total = partials[0][j / 8][j % 8];
      for (int k = 1; k < 8; ++k) total += partials[k][j / 8][j % 8];
      sums[j] = total;
    }
  });
}

// out[o·inner + i] = finish(sum of line (o, i)) for every line.
template <class Finish>
void float_sums(const Reduction& plan, float* out, Finish finish) {
  const float* x = plan.data.data_as<float>();
  if (plan.inner == 1) {
    parallel_for(0, plan.outer, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(plan.length, 1)),
                 [&](int64_t begin, int64_t end) {
                   for (int64_t o = begin; o < end; ++o) out[o] = finish(sum_run(x + o * plan.length, plan.length));
                 });
    return;
  }
  const int64_t blocks = (plan.inner + kColumns - 1) / kColumns;
  const int64_t work = plan.length * std::min(plan.inner, kColumns);
  parallel_for(0, plan.outer * blocks, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(work, 1)),
               [&](int64_t begin, int64_t end) {
                 double sums[kColumns];
                 for (int64_t n = begin; n < end; ++n) {
                   const int64_t o = n / blocks, first = (n % blocks) * kColumns;
                   const int64_t columns = std::min(kColumns, plan.inner - first);
                   sum_columns(x + o * plan.length * plan.inner + first, plan.length, plan.inner, columns, sums);
                   for (int64_t j = 0; j < columns; ++j) out[o * plan.inner + first + j] = finish(sums[j]);
                 }
               });
}

// ---------------------------------------------------------------- other reductions

// Integer sums wrap around in int64; an int32 output keeps the low 32 bits.
template <class T>
T wrapped_sum(const T* x, int64_t length, int64_t step) {
  uint64_t total = 0;
  for (int64_t r = 0; r < length; ++r) total += static_cast<uint64_t>(static_cast<int64_t>(x[r * step]));
  using U = std::make_unsigned_t<T>;
  const U low = static_cast<U>(total);
  T result;
  std::memcpy(&result, &low, sizeof(result));
  return result;
}

template <class T, bool Greatest>
T extreme(const T* x, int64_t length, int64_t step) {
  T result = x[0];
  for (int64_t r = 1; r < length; ++r) {
    const T value = x[r * step];
    if constexpr (std::is_same_v<T, float>) {
      result = Greatest ? simd::maximum(result, value) : simd::minimum(result, value);
    } else {
      result = Greatest ? std::max(result, value) : std::min(result, value);
    }
  }
  return result;
}

template <class T>
bool is_nan(T value) {
  if constexpr (std::is_floating_point_v<T>)
    return value != value;
  else
    return false;
}

// The first index of the extreme; a NaN counts as the extreme for both (as torch).
template <class T, bool Greatest>
int64_t arg_extreme(const T* x, int64_t length, int64_t step) {
  int64_t best = 0;
  T value = x[0];
  for (int64_t r = 1; r < length && !is_nan(value); ++r) {
    const T candidate = x[r * step];
    if (is_nan(candidate) || (Greatest ? candidate > value : candidate < value)) {
      value = candidate;
      best = r;
    }
  }
  return best;
}

// any (Any = true) or all of the line: an element is true when it is not zero (a NaN is).
template <class T, bool Any>
uint8_t any_or_all(const T* x, int64_t length, int64_t step) {
  for (int64_t r = 0; r < length; ++r) {
    if ((x[r * step] != 0) == Any) return Any;
  }
  return !Any;
}

// out[o·inner + i] = fn(first element of line (o, i), length, inner) for every line.
template <class In, class Out, class Fn>
void reduce_lines(const Reduction& plan, Out* out, Fn fn) {
  const In* x = plan.data.data_as<In>();
  for_each_line(plan, [&](int64_t o, int64_t i) {
    out[o * plan.inner + i] = fn(x + o * plan.length * plan.inner + i, plan.length, plan.inner);
  });
}

// ---------------------------------------------------------------- kernels

enum class Kind { Sum, Mean, Max, Min, Any, All };

Status unsupported(const KernelContext& context, DType dtype, const char* supported) {
  return invalid(context, std::string("dtype ") + dtype_name(dtype) + " is not supported (" + supported + ")");
}

Status dtype_allowed(const KernelContext& context, Kind kind, DType dtype) {
  const bool numeric = dtype == DType::Float32 || dtype == DType::Int32 || dtype == DType::Int64;
  if (kind == Kind::Mean && dtype != DType::Float32) return unsupported(context, dtype, "float32");
  if ((kind == Kind::Sum || kind == Kind::Max || kind == Kind::Min) && !numeric) {
    return unsupported(context, dtype, "float32, int32, int64");
  }
  return Status::success();
}

template <class T>
void sum_or_extreme(Kind kind, const Reduction& plan, Tensor& out) {
  T* data = out.data_as<T>();
  if (kind == Kind::Sum) {
    if constexpr (std::is_same_v<T, float>) {
      float_sums(plan, data, [](double sum) { return static_cast<float>(sum); });
    } else {
      reduce_lines<T, T>(plan, data, wrapped_sum<T>);
    }
  } else if (kind == Kind::Max) {
    reduce_lines<T, T>(plan, data, extreme<T, true>);
  } else {
    reduce_lines<T, T>(plan, data, extreme<T, false>);
  }
}

template <class T>
void any_or_all_of(Kind kind, const Reduction& plan, Tensor& out) {
  uint8_t* data = out.data_as<uint8_t>();
  if (kind == Kind::Any)
    reduce_lines<T, uint8_t>(plan, data, any_or_all<T, true>);
  else
    reduce_lines<T, uint8_t>(plan, data, any_or_all<T, false>);
}

void run_any_or_all(Kind kind, const Reduction& plan, Tensor& out) {
  switch (plan.data.dtype()) {
    case DType::Float32: return any_or_all_of<float>(kind, plan, out);
    case DType::Int8: return any_or_all_of<int8_t>(kind, plan, out);
    case DType::UInt8:
    case DType::Bool: return any_or_all_of<uint8_t>(kind, plan, out);
    case DType::Int32: return any_or_all_of<int32_t>(kind, plan, out);
    case DType::Int64: return any_or_all_of<int64_t>(kind, plan, out);
  }
}

// An empty reduction: sum 0, mean NaN, any false, all true (max and min are errors before).
void fill_empty(Kind kind, Tensor& out) {
  if (kind == Kind::Mean) {
    float* data = out.data_as<float>();
    std::fill(data, data + out.numel(), std::numeric_limits<float>::quiet_NaN());
  } else if (kind == Kind::All) {
    std::fill(out.data_as<uint8_t>(), out.data_as<uint8_t>() + out.numel(), uint8_t{1});
  }
}

void run_reduction(Kind kind, const Reduction& plan, Tensor& out) {
  if (plan.length == 0) return fill_empty(kind, out);
  if (kind == Kind::Any || kind == Kind::All) return run_any_or_all(kind, plan, out);
  if (kind == Kind::Mean) {
    const double count = static_cast<double>(plan.length);
    return float_sums(plan, out.data_as<float>(), [count](double sum) { return static_cast<float>(sum / count); });
  }
  switch (plan.data.dtype()) {
    case DType::Float32: return sum_or_extreme<float>(kind, plan, out);
    case DType::Int32: return sum_or_extreme<int32_t>(kind, plan, out);
    default: return sum_or_extreme<int64_t>(kind, plan, out);
  }
}

DType output_dtype(Kind kind, DType input) {
  if (kind == Kind::Any || kind == Kind::All) return DType::Bool;
  return kind == Kind::Mean ? DType::Float32 : input;
}

template <Kind K>
Status reduce_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& x = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(dtype_allowed(context, K, x.dtype()));
  std::vector<bool> reduced;
  bool keepdim = false;
  EDGERT_RETURN_IF_ERROR(read_axes(context, x.dim(), reduced));
  EDGERT_RETURN_IF_ERROR(read_flag(context, "keepdim", keepdim));
  const Reduction plan = plan_reduction(x, reduced, keepdim);
  if (plan.length == 0 && (K == Kind::Max || K == Kind::Min)) {
    return invalid(context, "cannot reduce over an empty dimension of " + shape_text(x.shape()));
  }
  Tensor out(output_dtype(K, x.dtype()), plan.output_shape);  // zeros: an empty sum, false
  run_reduction(K, plan, out);
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// ---------------------------------------------------------------- argmax, argmin

// The reduced dimension of argmax/argmin: attribute `axis`, or every dimension (flattened).
Status read_arg_axis(const KernelContext& context, int64_t rank, std::vector<bool>& reduced) {
  reduced.assign(static_cast<size_t>(rank), true);
  if (!context.attributes || !context.attributes->has("axis")) return Status::success();
  const int64_t* axis = std::get_if<int64_t>(&context.attributes->all().at("axis"));
  if (!axis) return invalid(context, "attribute axis must be an int");
  int64_t resolved = 0;
  EDGERT_RETURN_IF_ERROR(resolve_axis(context, *axis, rank, resolved));
  if (rank > 0) {
    reduced.assign(static_cast<size_t>(rank), false);
    reduced[static_cast<size_t>(resolved)] = true;
  }
  return Status::success();
}

template <bool Greatest>
void run_arg(const Reduction& plan, int64_t* out) {
  switch (plan.data.dtype()) {
    case DType::Float32: return reduce_lines<float, int64_t>(plan, out, arg_extreme<float, Greatest>);
    case DType::Int32: return reduce_lines<int32_t, int64_t>(plan, out, arg_extreme<int32_t, Greatest>);
    default: return reduce_lines<int64_t, int64_t>(plan, out, arg_extreme<int64_t, Greatest>);
  }
}

template <bool Greatest>
Status arg_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& x = *context.inputs[0];
  const DType dtype = x.dtype();
  if (dtype != DType::Float32 && dtype != DType::Int32 && dtype != DType::Int64) {
    return unsupported(context, dtype, "float32, int32, int64");
  }
  std::vector<bool> reduced;
  bool keepdim = false;
  EDGERT_RETURN_IF_ERROR(read_arg_axis(context, x.dim(), reduced));
  EDGERT_RETURN_IF_ERROR(read_flag(context, "keepdim", keepdim));
  const Reduction plan = plan_reduction(x, reduced, keepdim);
  if (plan.length == 0) {
    return invalid(context, "cannot reduce over an empty dimension of " + shape_text(x.shape()));
  }
  Tensor out = Tensor::uninitialized(DType::Int64, plan.output_shape);  // every element is written
  run_arg<Greatest>(plan, out.data_as<int64_t>());
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// ---------------------------------------------------------------- cumsum

// out[..., r, ...] = x[..., 0, ...] + ... + x[..., r, ...] along `axis`, in order. float32
// accumulates in float64 and rounds each output once (as torch's CPU cumsum); integers wrap.
template <class T, class Accumulator>
void cumulative_sums(const Reduction& plan, T* out) {
  const T* data = plan.data.data_as<T>();
  const int64_t lines = plan.outer * plan.inner;
  parallel_for(0, lines, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(plan.length, 1)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t line = begin; line < end; ++line) {
                   const int64_t o = line / plan.inner, i = line % plan.inner;
                   const int64_t base = o * plan.length * plan.inner + i;
                   Accumulator sum = 0;
                   for (int64_t r = 0; r < plan.length; ++r) {
                     const int64_t at = base + r * plan.inner;
                     if constexpr (std::is_integral_v<T>) {
                       sum = static_cast<Accumulator>(static_cast<uint64_t>(sum) + static_cast<uint64_t>(data[at]));
                     } else {
                       sum += static_cast<Accumulator>(data[at]);
                     }
                     out[at] = static_cast<T>(sum);
                   }
                 }
               });
}

// Attribute `axis` (required): the running sum along it, the input's shape and dtype.
Status cumsum_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& x = *context.inputs[0];
  const DType dtype = x.dtype();
  if (dtype != DType::Float32 && dtype != DType::Int32 && dtype != DType::Int64) {
    return unsupported(context, dtype, "float32, int32, int64");
  }
  if (!context.attributes || !context.attributes->has("axis")) return invalid(context, "attribute axis is required");
  const int64_t* axis = std::get_if<int64_t>(&context.attributes->all().at("axis"));
  if (!axis) return invalid(context, "attribute axis must be an int");
  int64_t resolved = 0;
  EDGERT_RETURN_IF_ERROR(resolve_axis(context, *axis, x.dim(), resolved));
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), false);
  if (x.dim() > 0) reduced[static_cast<size_t>(resolved)] = true;
  const Reduction plan = plan_reduction(x, reduced, true);
  Tensor out = Tensor::uninitialized(dtype, x.shape());  // every element is written
  switch (dtype) {
    case DType::Float32: cumulative_sums<float, double>(plan, out.data_as<float>()); break;
    case DType::Int32: cumulative_sums<int32_t, int32_t>(plan, out.data_as<int32_t>()); break;
    default: cumulative_sums<int64_t, int64_t>(plan, out.data_as<int64_t>()); break;
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::cumsum", cumsum_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::cumsum", {{"axis", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::sum", reduce_kernel<Kind::Sum>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::sum", {{"axes", AttributeKind::Ints}, {"keepdim", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::mean", reduce_kernel<Kind::Mean>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::mean", {{"axes", AttributeKind::Ints}, {"keepdim", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::max", reduce_kernel<Kind::Max>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::max", {{"axes", AttributeKind::Ints}, {"keepdim", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::min", reduce_kernel<Kind::Min>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::min", {{"axes", AttributeKind::Ints}, {"keepdim", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::any", reduce_kernel<Kind::Any>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::any", {{"axes", AttributeKind::Ints}, {"keepdim", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::all", reduce_kernel<Kind::All>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::all", {{"axes", AttributeKind::Ints}, {"keepdim", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::argmax", arg_kernel<true>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::argmax", {{"axis", AttributeKind::Int}, {"keepdim", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::argmin", arg_kernel<false>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::argmin", {{"axis", AttributeKind::Int}, {"keepdim", AttributeKind::Int}});

}  // namespace edgert::kernels
