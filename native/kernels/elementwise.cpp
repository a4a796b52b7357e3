// Elementwise kernels: add, sub, mul, div (numpy broadcasting) and relu. float32 add,
// sub, mul, div and relu run vectorized (vector_math.hpp) over contiguous rows.
#include <atomic>
#include <cmath>
#include <type_traits>

#include "common.hpp"
#include "edgert/threadpool.h"
#include "linear.hpp"
#include "vector_math.hpp"

namespace edgert::kernels {
namespace {

// Integer arithmetic wraps around (two's complement) instead of overflowing.
template <class T>
using Unsigned = std::make_unsigned_t<T>;

template <class T>
struct Add {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a + b;
    else
      return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
  }
  const char* error() const { return nullptr; }
};

template <class T>
struct Sub {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a - b;
    else
      return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
  }
  const char* error() const { return nullptr; }
};

template <class T>
struct Mul {
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>)
      return a * b;
    else
      return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
  }
  const char* error() const { return nullptr; }
};

// Floats: IEEE division. Integers: floor division (numpy's `//`); division by zero is an error.
template <class T>
struct Div {
  std::atomic<bool> divided_by_zero{false};
  T operator()(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
      return a / b;
    } else {
      if (b == 0) {
        divided_by_zero.store(true, std::memory_order_relaxed);
        return 0;
      }
      if (b == -1) return static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(a));
      T quotient = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --quotient;
      return quotient;
    }
  }
  const char* error() const { return divided_by_zero.load() ? "integer division by zero" : nullptr; }
};

// The vectorized float32 loop for each operator (vector_math.hpp).
template <template <class> class Op>
constexpr BinaryOp float_op() {
  if constexpr (std::is_same_v<Op<float>, Add<float>>)
    return BinaryOp::Add;
  else if constexpr (std::is_same_v<Op<float>, Sub<float>>)
    return BinaryOp::Sub;
  else if constexpr (std::is_same_v<Op<float>, Mul<float>>)
    return BinaryOp::Mul;
  else
    return BinaryOp::Div;
}

// out[i] = op(a[i * step_a], b[i * step_b]) for i < count.
template <class T, template <class> class Op>
void map_row(const T* a, int64_t step_a, const T* b, int64_t step_b, T* out, int64_t count, Op<T>& op) {
  if constexpr (std::is_same_v<T, float>) {
    if ((step_a == 0 || step_a == 1) && (step_b == 0 || step_b == 1)) {
      binary_floats(float_op<Op>(), a, step_a, b, step_b, out, count);
      return;
    }
  }
  for (int64_t i = 0; i < count; ++i) out[i] = op(a[i * step_a], b[i * step_b]);
}

// Elements per chunk of the vectorized flat loops: about 30 us of work on one core, a waste
// of a thread wake-up (and of a shared core's time slice) below that.
constexpr int64_t kVectorGrain = int64_t{1} << 18;

bool is_contiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  return strides == Tensor::contiguous_strides(shape);
}

// The same element order with neighbouring dimensions merged wherever every operand steps
// through both as through one (dimensions of size 1 dropped): [1, C, H, W] · [1, C, 1, 1]
// becomes C rows of H·W, not C·H rows of W, so the vector loops run over whole planes.
Broadcast coalesced(const Broadcast& plan) {
  Broadcast merged;  // built from the last dimension, reversed at the end
  merged.strides.resize(plan.strides.size());
  for (size_t d = plan.shape.size(); d-- > 0;) {
    if (plan.shape[d] == 1 && !merged.shape.empty()) continue;
    if (!merged.shape.empty() && merged.shape.back() == 1) {  // a leading 1 of the last dims
      merged.shape.back() = plan.shape[d];
      for (size_t t = 0; t < plan.strides.size(); ++t) merged.strides[t].back() = plan.strides[t][d];
      continue;
    }
    bool joins = !merged.shape.empty();
    for (size_t t = 0; t < plan.strides.size() && joins; ++t)
      joins = plan.strides[t][d] == merged.strides[t].back() * merged.shape.back();
    if (joins) {
      merged.shape.back() *= plan.shape[d];
      continue;
    }
    merged.shape.push_back(plan.shape[d]);
    for (size_t t = 0; t < plan.strides.size(); ++t) merged.strides[t].push_back(plan.strides[t][d]);
  }
  std::reverse(merged.shape.begin(), merged.shape.end());
  for (auto& strides : merged.strides) std::reverse(strides.begin(), strides.end());
  return merged;
}

// Two operands and the output laid out alike: one flat range, split anywhere.
template <class T, template <class> class Op>
void map_flat(const T* a, const T* b, T* out, int64_t count, Op<T>& op) {
  const int64_t grain = std::is_same_v<T, float> ? kVectorGrain : kParallelGrain;
  parallel_for(0, count, grain, [&](int64_t begin, int64_t end) {
    map_row<T, Op>(a + begin, 1, b + begin, 1, out + begin, end - begin, op);
  });
}

template <class T, template <class> class Op>
void binary_map(const Broadcast& original, const T* a, const T* b, T* out, Op<T>& op) {
  const Broadcast plan = coalesced(original);
  const size_t rank = plan.shape.size();
  const int64_t inner = rank ? plan.shape[rank - 1] : 1;
  const int64_t rows = product(plan.shape, 0, rank ? rank - 1 : 0);
  if (inner == 0 || rows == 0) return;
  if (is_contiguous(plan.shape, plan.strides[0]) && is_contiguous(plan.shape, plan.strides[1])) {
    map_flat<T, Op>(a, b, out, rows * inner, op);  // same shape, both contiguous
    return;
  }
  const int64_t stride_a = rank ? plan.strides[0][rank - 1] : 0;
  const int64_t stride_b = rank ? plan.strides[1][rank - 1] : 0;
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / inner), [&](int64_t begin, int64_t end) {
    int64_t offsets[2];
    for (int64_t r = begin; r < end; ++r) {
      row_offsets(plan, r, offsets);
      map_row<T, Op>(a + offsets[0], stride_a, b + offsets[1], stride_b, out + r * inner, inner, op);
    }
  });
}

template <class T, template <class> class Op>
Status run_binary(KernelContext& context, const Tensor& a, const Tensor& b) {
  // The common case, two contiguous operands of one shape, needs no broadcast plan: one flat
  // range (what binary_map would coalesce the plan to), no allocation beyond the output's.
  const bool flat = a.shape() == b.shape() && a.is_contiguous() && b.is_contiguous();
  Broadcast plan;
  if (!flat) EDGERT_RETURN_IF_ERROR(broadcast(context, {&a, &b}, plan));
  Tensor out = Tensor::uninitialized(a.dtype(), flat ? a.shape() : plan.shape);  // every element is written
  Op<T> op;
  if (flat) {
    map_flat<T, Op>(a.data_as<T>(), b.data_as<T>(), out.data_as<T>(), a.numel(), op);
  } else {
    binary_map<T, Op>(plan, a.data_as<T>(), b.data_as<T>(), out.data_as<T>(), op);
  }
  if (const char* message = op.error()) return invalid(context, message);
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

template <template <class> class Op>
Status binary_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 2));
  const Tensor& a = *context.inputs[0];
  const Tensor& b = *context.inputs[1];
  if (a.dtype() != b.dtype()) {
    return invalid(context, std::string("inputs have dtypes ") + dtype_name(a.dtype()) + " and " +
                                dtype_name(b.dtype()) + "; both must have the same dtype");
  }
  switch (a.dtype()) {
    case DType::Float32: return run_binary<float, Op>(context, a, b);
    case DType::Int32: return run_binary<int32_t, Op>(context, a, b);
    case DType::Int64: return run_binary<int64_t, Op>(context, a, b);
    default:
      return invalid(context,
                     std::string("dtype ") + dtype_name(a.dtype()) + " is not supported (float32, int32, int64)");
  }
}

template <class T, class Fn>
Tensor unary_map(const Tensor& input, Fn fn) {
  Broadcast plan;
  plan.shape = input.shape();
  plan.strides = {input.strides()};
  Tensor out = Tensor::uninitialized(input.dtype(), input.shape());  // every element is written
  const size_t rank = plan.shape.size();
  const int64_t inner = rank ? plan.shape[rank - 1] : 1;
  const int64_t rows = product(plan.shape, 0, rank ? rank - 1 : 0);
  if (inner == 0 || rows == 0) return out;
  const int64_t stride = rank ? plan.strides[0][rank - 1] : 0;
  const T* in = input.data_as<T>();
  T* data = out.data_as<T>();
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / inner), [&](int64_t begin, int64_t end) {
    int64_t offset = 0;
    for (int64_t r = begin; r < end; ++r) {
      row_offsets(plan, r, &offset);
      for (int64_t i = 0; i < inner; ++i) data[r * inner + i] = fn(in[offset + i * stride]);
    }
  });
  return out;
}

// relu of a contiguous float32 tensor: vectorized, over flat chunks.
Tensor relu_contiguous(const Tensor& x) {
  Tensor out = Tensor::uninitialized(DType::Float32, x.shape());  // every element is written
  const float* in = x.data_as<float>();
  float* data = out.data_as<float>();
  parallel_for(0, x.numel(), kVectorGrain,
               [&](int64_t begin, int64_t end) { relu_floats(in + begin, data + begin, end - begin); });
  return out;
}

Status relu_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& x = *context.inputs[0];
  switch (x.dtype()) {
    case DType::Float32:
      (*context.outputs)[0] = is_contiguous(x.shape(), x.strides()) ? relu_contiguous(x) : unary_map<float>(x, relu);
      break;
    case DType::Int32: (*context.outputs)[0] = unary_map<int32_t>(x, [](int32_t v) { return v > 0 ? v : 0; }); break;
    case DType::Int64:
      (*context.outputs)[0] = unary_map<int64_t>(x, [](int64_t v) { return v > 0 ? v : int64_t{0}; });
      break;
    default:
      return invalid(context,
                     std::string("dtype ") + dtype_name(x.dtype()) + " is not supported (float32, int32, int64)");
  }
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::add", binary_kernel<Add>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::add");
EDGERT_REGISTER_OPERATOR("edgert::sub", binary_kernel<Sub>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::sub");
EDGERT_REGISTER_OPERATOR("edgert::mul", binary_kernel<Mul>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::mul");
EDGERT_REGISTER_OPERATOR("edgert::div", binary_kernel<Div>);
EDGERT_OPERATOR_ATTRIBUTES("edgert::div");
EDGERT_REGISTER_OPERATOR("edgert::relu", relu_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::relu");

}  // namespace edgert::kernels
