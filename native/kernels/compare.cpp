// Broadcasting operators of two or three inputs (docs/operators.md): maximum, minimum, pow,
// the comparisons, the logical operators and where. Inputs are read in place whatever their
// strides; each output row (the last dimension) is one run of a loop, and inputs that are
// contiguous (or one repeated value) make the whole output one flat run, split across the
// thread pool. float32 maximum and minimum and 4-byte where run vectorized (simd.hpp).
#include <cmath>
#include <cstring>
#include <string>

#include "common.hpp"
#include "edgert/threadpool.h"
#include "simd.hpp"

namespace edgert::kernels {
namespace {

constexpr size_t kMaxInputs = 3;

// Elements per chunk split across threads: about 30 us of work on one core (as
// elementwise.cpp: below that a thread wake-up costs more than it saves); pow, a libm call
// per element, splits from far fewer.
constexpr int64_t kFlatGrain = int64_t{1} << 18;
constexpr int64_t kPowGrain = int64_t{1} << 12;

// A broadcast input's step through the flat output: 1 when it is laid out contiguously in
// the output's shape (dimensions of size 1 aside), 0 when it is one value repeated; false
// otherwise.
bool flat_step(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides, int64_t& step) {
  bool contiguous = true, repeated = true;
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    contiguous = contiguous && strides[d] == expected;
    repeated = repeated && strides[d] == 0;
    expected *= shape[d];
  }
  step = contiguous ? 1 : 0;
  return contiguous || repeated;
}

// Calls run(out_offset, offsets, steps, count) for runs of the broadcast output: element k
// of a run is output element out_offset + k and element offsets[t] + k·steps[t] of input t.
// Runs of about `grain` elements are split across threads.
template <class Run>
void for_each_run(const Broadcast& plan, int64_t grain, Run run) {
  const size_t inputs = plan.strides.size();
  const size_t rank = plan.shape.size();
  const int64_t total = product(plan.shape, 0, rank);
  if (total == 0) return;
  int64_t steps[kMaxInputs] = {};
  bool flat = true;
  for (size_t t = 0; t < inputs; ++t) flat = flat_step(plan.shape, plan.strides[t], steps[t]) && flat;
  if (flat) {
    parallel_for(0, total, grain, [&](int64_t begin, int64_t end) {
      int64_t offsets[kMaxInputs] = {};
      for (size_t t = 0; t < inputs; ++t) offsets[t] = begin * steps[t];
      run(begin, offsets, steps, end - begin);
    });
    return;
  }
  const int64_t inner = plan.shape[rank - 1];  // rank >= 1: a scalar output is flat
  for (size_t t = 0; t < inputs; ++t) steps[t] = plan.strides[t][rank - 1];
  parallel_for(0, total / inner, std::max<int64_t>(1, grain / inner), [&](int64_t begin, int64_t end) {
    int64_t offsets[kMaxInputs] = {};
    for (int64_t r = begin; r < end; ++r) {
      row_offsets(plan, r, offsets);
      run(r * inner, offsets, steps, inner);
    }
  });
}

// out[i] = fn(a[...], b[...]) over the broadcast of a and b, out of dtype `dtype`.
template <class In, class Out, class Fn>
Tensor map_binary(const Broadcast& plan, const Tensor& a, const Tensor& b, DType dtype, Fn fn,
                  int64_t grain = kFlatGrain) {
  Tensor out = Tensor::uninitialized(dtype, plan.shape);  // every element is written
  const In* x = a.data_as<In>();
  const In* y = b.data_as<In>();
  Out* data = out.data_as<Out>();
  for_each_run(plan, grain, [&](int64_t first, const int64_t* offsets, const int64_t* steps, int64_t count) {
    const In* xs = x + offsets[0];
    const In* ys = y + offsets[1];
    for (int64_t i = 0; i < count; ++i) data[first + i] = fn(xs[i * steps[0]], ys[i * steps[1]]);
  });
  return out;
}

Status same_dtypes(const KernelContext& context, const Tensor& a, const Tensor& b) {
  if (a.dtype() == b.dtype()) return Status::success();
  return invalid(context, std::string("inputs have dtypes ") + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) +
                              "; both must have the same dtype");
}

Status unsupported(const KernelContext& context, DType dtype, const char* supported) {
  return invalid(context, std::string("dtype ") + dtype_name(dtype) + " is not supported (" + supported + ")");
}

// The two inputs of a binary operator, of one dtype, and their broadcast.
Status binary_inputs(KernelContext& context, Broadcast& plan) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 2));
  EDGERT_RETURN_IF_ERROR(same_dtypes(context, *context.inputs[0], *context.inputs[1]));
  return broadcast(context, {context.inputs[0], context.inputs[1]}, plan);
}

// ---------------------------------------------------------------- maximum, minimum

template <bool Greatest>
void extreme_floats(const float* a, int64_t a_step, const float* b, int64_t b_step, float* out, int64_t count) {
  if (a_step > 1 || b_step > 1 || a_step < 0 || b_step < 0) {
    for (int64_t i = 0; i < count; ++i) {
      out[i] = Greatest ? simd::maximum(a[i * a_step], b[i * b_step]) : simd::minimum(a[i * a_step], b[i * b_step]);
    }
    return;
  }
  simd::map2(a, a_step, b, b_step, out, count, [](const auto& x, const auto& y) {
    if constexpr (Greatest)
      return simd::maximum(x, y);
    else
      return simd::minimum(x, y);
  });
}

template <bool Greatest>
Tensor extreme_of_floats(const Broadcast& plan, const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::uninitialized(DType::Float32, plan.shape);  // every element is written
  const float* x = a.data_as<float>();
  const float* y = b.data_as<float>();
  float* data = out.data_as<float>();
  for_each_run(plan, kFlatGrain, [&](int64_t first, const int64_t* offsets, const int64_t* steps, int64_t count) {
    extreme_floats<Greatest>(x + offsets[0], steps[0], y + offsets[1], steps[1], data + first, count);
  });
  return out;
}

template <bool Greatest>
Status extreme_kernel(KernelContext& context) {
  Broadcast plan;
  EDGERT_RETURN_IF_ERROR(binary_inputs(context, plan));
  const Tensor& a = *context.inputs[0];
  const Tensor& b = *context.inputs[1];
  auto pick = [](auto x, auto y) { return Greatest ? std::max(x, y) : std::min(x, y); };
  Tensor& out = (*context.outputs)[0];
  switch (a.dtype()) {
    case DType::Float32: out = extreme_of_floats<Greatest>(plan, a, b); break;
    case DType::Int32: out = map_binary<int32_t, int32_t>(plan, a, b, DType::Int32, pick); break;
    case DType::Int64: out = map_binary<int64_t, int64_t>(plan, a, b, DType::Int64, pick); break;
    default: return unsupported(context, a.dtype(), "float32, int32, int64");
  }
  return Status::success();
}

// ---------------------------------------------------------------- pow

// std::pow, except that an exponent of 2 is x·x and one of 0.5 is sqrt(x): the bytes of mul
// and sqrt (pow(-0, 0.5) is then -0 and pow(-inf, 0.5) NaN, as torch).
float power(float x, float exponent) {
  if (exponent == 2.0f) return x * x;
  if (exponent == 0.5f) return std::sqrt(x);
  return std::pow(x, exponent);
}

Status pow_kernel(KernelContext& context) {
  Broadcast plan;
  EDGERT_RETURN_IF_ERROR(binary_inputs(context, plan));
  const Tensor& a = *context.inputs[0];
  if (a.dtype() != DType::Float32) return unsupported(context, a.dtype(), "float32");
  (*context.outputs)[0] = map_binary<float, float>(
      plan, a, *context.inputs[1], DType::Float32, [](float x, float y) { return power(x, y); }, kPowGrain);
  return Status::success();
}

// ---------------------------------------------------------------- comparisons

enum class Comparison { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };

// IEEE comparisons: every one with a NaN is false, except not_equal.
template <Comparison C, class T>
EDGERT_SIMD_INLINE uint8_t compare(T a, T b) {
  if constexpr (C == Comparison::Equal)
    return a == b;
  else if constexpr (C == Comparison::NotEqual)
    return a != b;
  else if constexpr (C == Comparison::Less)
    return a < b;
  else if constexpr (C == Comparison::LessEqual)
    return a <= b;
  else if constexpr (C == Comparison::Greater)
    return a > b;
  else
    return a >= b;
}

template <Comparison C>
Status comparison_kernel(KernelContext& context) {
  Broadcast plan;
  EDGERT_RETURN_IF_ERROR(binary_inputs(context, plan));
  const Tensor& a = *context.inputs[0];
  const Tensor& b = *context.inputs[1];
  constexpr bool equality = C == Comparison::Equal || C == Comparison::NotEqual;
  auto comparison = [](auto x, auto y) { return compare<C>(x, y); };
  Tensor& out = (*context.outputs)[0];
  switch (a.dtype()) {
    case DType::Float32: out = map_binary<float, uint8_t>(plan, a, b, DType::Bool, comparison); break;
    case DType::Int32: out = map_binary<int32_t, uint8_t>(plan, a, b, DType::Bool, comparison); break;
    case DType::Int64: out = map_binary<int64_t, uint8_t>(plan, a, b, DType::Bool, comparison); break;
    case DType::Bool:
      if (equality) {  // any non-zero byte is true
        out = map_binary<uint8_t, uint8_t>(plan, a, b, DType::Bool,
                                           [](uint8_t x, uint8_t y) { return compare<C, bool>(x != 0, y != 0); });
        break;
      }
      [[fallthrough]];
    default: return unsupported(context, a.dtype(), equality ? "float32, int32, int64, bool" : "float32, int32, int64");
  }
  return Status::success();
}

// ---------------------------------------------------------------- logical operators

enum class Logic { And, Or, Xor };

template <Logic L>
Status logical_kernel(KernelContext& context) {
  Broadcast plan;
  EDGERT_RETURN_IF_ERROR(binary_inputs(context, plan));
  const Tensor& a = *context.inputs[0];
  if (a.dtype() != DType::Bool) return unsupported(context, a.dtype(), "bool");
  (*context.outputs)[0] =
      map_binary<uint8_t, uint8_t>(plan, a, *context.inputs[1], DType::Bool, [](uint8_t x, uint8_t y) -> uint8_t {
        const bool p = x != 0, q = y != 0;
        if constexpr (L == Logic::And)
          return p && q;
        else if constexpr (L == Logic::Or)
          return p || q;
        else
          return p != q;
      });
  return Status::success();
}

Status logical_not_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& x = *context.inputs[0];
  if (x.dtype() != DType::Bool) return unsupported(context, x.dtype(), "bool");
  Broadcast plan;
  plan.shape = x.shape();
  plan.strides = {x.strides()};
  Tensor out = Tensor::uninitialized(DType::Bool, x.shape());  // every element is written
  const uint8_t* in = x.data_as<uint8_t>();
  uint8_t* data = out.data_as<uint8_t>();
  for_each_run(plan, kFlatGrain, [&](int64_t first, const int64_t* offsets, const int64_t* steps, int64_t count) {
    for (int64_t i = 0; i < count; ++i) data[first + i] = in[offsets[0] + i * steps[0]] == 0;
  });
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// ---------------------------------------------------------------- where

// A vector of 4-byte words: consecutive ones (step 1) or one repeated (step 0).
template <class M>
EDGERT_SIMD_INLINE M load_words(const int32_t* data, int64_t step) {
  if (!step) return simd::splat<M>(*data);
  M words;
  std::memcpy(&words, data, sizeof(words));
  return words;
}

// The 4-byte where of one run whose steps are 0 or 1: vector selects on the bit patterns
// (a pure copy, the same bytes as the scalar loop).
void where_words_vectorized(const uint8_t* condition, int64_t c_step, const int32_t* a, int64_t a_step,
                            const int32_t* b, int64_t b_step, int32_t* out, int64_t count) {
  simd::dispatch([&](auto width) {
    using W = decltype(width);
    using M = typename W::Int;
    using B = typename W::Byte;
    constexpr int64_t kLanes = W::lanes;
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      B bytes;
      if (c_step)
        std::memcpy(&bytes, condition + i, sizeof(bytes));
      else
        bytes = simd::splat<B>(*condition);
      const M take_a = __builtin_convertvector(bytes, M) != 0;
      const M words =
          (take_a & load_words<M>(a + i * a_step, a_step)) | (~take_a & load_words<M>(b + i * b_step, b_step));
      std::memcpy(out + i, &words, sizeof(words));
    }
    for (; i < count; ++i) out[i] = condition[i * c_step] ? a[i * a_step] : b[i * b_step];
  });
}

template <class T>
void where_run(const uint8_t* condition, int64_t c_step, const T* a, int64_t a_step, const T* b, int64_t b_step, T* out,
               int64_t count, bool booleans) {
  if constexpr (sizeof(T) == 4) {
    if (c_step >= 0 && c_step <= 1 && a_step >= 0 && a_step <= 1 && b_step >= 0 && b_step <= 1) {
      where_words_vectorized(condition, c_step, a, a_step, b, b_step, out, count);
      return;
    }
  }
  for (int64_t i = 0; i < count; ++i) {
    const T value = condition[i * c_step] ? a[i * a_step] : b[i * b_step];
    out[i] = booleans ? static_cast<T>(value != 0) : value;  // bool outputs are 0 or 1
  }
}

// Storage types by element size: the values are copied, never computed with.
template <class T>
Tensor where_of(const Broadcast& plan, const Tensor& condition, const Tensor& a, const Tensor& b) {
  Tensor out = Tensor::uninitialized(a.dtype(), plan.shape);  // every element is written
  const uint8_t* c = condition.data_as<uint8_t>();
  const T* x = static_cast<const T*>(a.data());
  const T* y = static_cast<const T*>(b.data());
  T* data = static_cast<T*>(out.data());
  const bool booleans = a.dtype() == DType::Bool;
  for_each_run(plan, kFlatGrain, [&](int64_t first, const int64_t* offsets, const int64_t* steps, int64_t count) {
    where_run<T>(c + offsets[0], steps[0], x + offsets[1], steps[1], y + offsets[2], steps[2], data + first, count,
                 booleans);
  });
  return out;
}

// where(condition, a, b): a where the condition is true (any non-zero byte), else b.
Status where_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 3, 3));
  const Tensor& condition = *context.inputs[0];
  const Tensor& a = *context.inputs[1];
  const Tensor& b = *context.inputs[2];
  EDGERT_RETURN_IF_ERROR(check_dtype(context, condition, DType::Bool, "condition"));
  EDGERT_RETURN_IF_ERROR(same_dtypes(context, a, b));
  Broadcast plan;
  EDGERT_RETURN_IF_ERROR(broadcast(context, {&condition, &a, &b}, plan));
  Tensor& out = (*context.outputs)[0];
  switch (dtype_size(a.dtype())) {
    case 1: out = where_of<uint8_t>(plan, condition, a, b); break;
    case 4: out = where_of<int32_t>(plan, condition, a, b); break;
    case 8: out = where_of<int64_t>(plan, condition, a, b); break;
    default: return unsupported(context, a.dtype(), "any dtype of 1, 4 or 8 bytes");
  }
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::maximum", extreme_kernel<true>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::maximum");
EDGERT_REGISTER_OPERATOR("edgert::minimum", extreme_kernel<false>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::minimum");
EDGERT_REGISTER_OPERATOR("edgert::pow", pow_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::pow");
EDGERT_REGISTER_OPERATOR("edgert::equal", comparison_kernel<Comparison::Equal>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::equal");
EDGERT_REGISTER_OPERATOR("edgert::not_equal", comparison_kernel<Comparison::NotEqual>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::not_equal");
EDGERT_REGISTER_OPERATOR("edgert::less", comparison_kernel<Comparison::Less>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::less");
EDGERT_REGISTER_OPERATOR("edgert::less_equal", comparison_kernel<Comparison::LessEqual>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::less_equal");
EDGERT_REGISTER_OPERATOR("edgert::greater", comparison_kernel<Comparison::Greater>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::greater");
EDGERT_REGISTER_OPERATOR("edgert::greater_equal", comparison_kernel<Comparison::GreaterEqual>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::greater_equal");
EDGERT_REGISTER_OPERATOR("edgert::logical_and", logical_kernel<Logic::And>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::logical_and");
EDGERT_REGISTER_OPERATOR("edgert::logical_or", logical_kernel<Logic::Or>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::logical_or");
EDGERT_REGISTER_OPERATOR("edgert::logical_xor", logical_kernel<Logic::Xor>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::logical_xor");
EDGERT_REGISTER_OPERATOR("edgert::logical_not", logical_not_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::logical_not");
EDGERT_REGISTER_OPERATOR("edgert::where", where_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::where");

}  // namespace edgert::kernels
