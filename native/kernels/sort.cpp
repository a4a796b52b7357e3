// topk and sort along one axis (docs/operators.md), with torch's CPU semantics: a NaN is
// greater than every number (first in a descending order, last in an ascending one), and
// topk selects with the same standard-library algorithms torch's CPU kernel uses (a partial
// sort when k·64 <= n, else nth_element, then a sort of the first k - 1 when `sorted`), on
// (value, index) pairs filled in index order, so that it returns what torch returns. sort is
// stable: equal values keep their index order (torch's stable=True; its default sort orders
// ties in an unspecified way).
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"
#include "edgert/threadpool.h"

namespace edgert::kernels {
namespace {

template <class T>
bool is_nan(T value) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(value);
  else
    return false;
}

// torch's orders: `Greater` puts NaN first, then the largest; `Less` the smallest first and
// NaN last. Both compare the values only.
template <class T>
struct Greater {
  bool operator()(const std::pair<T, int64_t>& x, const std::pair<T, int64_t>& y) const {
    return (is_nan(x.first) && !is_nan(y.first)) || x.first > y.first;
  }
};

template <class T>
struct Less {
  bool operator()(const std::pair<T, int64_t>& x, const std::pair<T, int64_t>& y) const {
    return (!is_nan(x.first) && is_nan(y.first)) || x.first < y.first;
  }
};

// The lines along `axis` of a contiguous [outer, length, inner] tensor: line (o, i) holds
// the elements o·length·inner + j·inner + i.
struct Lines {
  int64_t outer = 1, length = 1, inner = 1;
  int64_t count() const { return outer * inner; }
};

Lines lines_of(const std::vector<int64_t>& shape, int64_t axis) {
  Lines lines;
  lines.outer = product(shape, 0, static_cast<size_t>(axis));
  lines.length = shape[static_cast<size_t>(axis)];
  lines.inner = product(shape, static_cast<size_t>(axis) + 1, shape.size());
  return lines;
}

Status read_axis(const KernelContext& context, const Tensor& x, int64_t& axis) {
  axis = context.attributes ? context.attributes->get_int("axis", -1) : -1;
  const int64_t given = axis;
  if (x.dim() == 0 || !normalize_axis(axis, x.dim())) {
    return invalid(context,
                   "attribute axis " + std::to_string(given) + " is out of range for input " + shape_text(x.shape()));
  }
  return Status::success();
}

Status check_input(const KernelContext& context, const Tensor& x) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  if (context.outputs->size() != 2) return invalid(context, "expected two outputs (values and indices)");
  const DType dtype = x.dtype();
  if (dtype != DType::Float32 && dtype != DType::Int32 && dtype != DType::Int64) {
    return invalid(context, std::string("dtype ") + dtype_name(dtype) + " is not supported (float32, int32, int64)");
  }
  return Status::success();
}

// Runs select(queue, line) for every line, split across the pool; `select` orders the
// line's (value, index) pairs so that the first `kept` are the results, in their order.
template <class T, class Select>
void select_lines(const Tensor& x, const Lines& lines, int64_t kept, T* values, int64_t* indices, Select&& select) {
  const T* data = x.data_as<T>();
  const int64_t grain = std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, lines.length));
  parallel_for(0, lines.count(), grain, [&](int64_t begin, int64_t end) {
    std::vector<std::pair<T, int64_t>> queue(static_cast<size_t>(lines.length));
    for (int64_t line = begin; line < end; ++line) {
      const int64_t o = line / lines.inner, i = line % lines.inner;
      const T* source = data + o * lines.length * lines.inner + i;
      for (int64_t j = 0; j < lines.length; ++j) queue[static_cast<size_t>(j)] = {source[j * lines.inner], j};
      select(queue);
      const int64_t base = o * kept * lines.inner + i;
      for (int64_t j = 0; j < kept; ++j) {
        values[base + j * lines.inner] = queue[static_cast<size_t>(j)].first;
        indices[base + j * lines.inner] = queue[static_cast<size_t>(j)].second;
      }
    }
  });
}

// torch's topk_impl_loop: the order of the k selected pairs is what these algorithms leave
// (sorted when k·64 <= n or `sorted`).
template <class T, class Compare>
void top(std::vector<std::pair<T, int64_t>>& queue, int64_t k, bool sorted, Compare compare) {
  const auto first = queue.begin();
  if (k * 64 <= static_cast<int64_t>(queue.size())) {
    std::partial_sort(first, first + k, queue.end(), compare);
    return;
  }
  std::nth_element(first, first + (k - 1), queue.end(), compare);
  if (sorted) std::sort(first, first + (k - 1), compare);
}

template <class T>
void run_topk(const Tensor& x, const Lines& lines, int64_t k, bool largest, bool sorted, Tensor& values,
              Tensor& indices) {
  select_lines<T>(x, lines, k, values.data_as<T>(), indices.data_as<int64_t>(), [&](auto& queue) {
    if (largest)
      top(queue, k, sorted, Greater<T>());
    else
      top(queue, k, sorted, Less<T>());
  });
}

template <class T>
void run_sort(const Tensor& x, const Lines& lines, bool descending, Tensor& values, Tensor& indices) {
  select_lines<T>(x, lines, lines.length, values.data_as<T>(), indices.data_as<int64_t>(), [&](auto& queue) {
    if (descending)
      std::stable_sort(queue.begin(), queue.end(), Greater<T>());
    else
      std::stable_sort(queue.begin(), queue.end(), Less<T>());
  });
}

// Attributes `k` (required, 0 <= k <= the axis' size), `axis` (default -1), `largest`
// (default 1), `sorted` (default 1). Outputs: the values (dtype of x) and their int64
// indices along `axis`, of x's shape with k along `axis`.
Status topk_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_input(context, input));
  int64_t axis = -1;
  EDGERT_RETURN_IF_ERROR(read_axis(context, input, axis));
  if (context.attributes == nullptr || !context.attributes->has("k"))
    return invalid(context, "attribute k is required");
  const int64_t k = context.attributes->get_int("k", 0);
  const int64_t size = input.shape()[static_cast<size_t>(axis)];
  if (k < 0 || k > size) {
    return invalid(context, "attribute k " + std::to_string(k) + " is out of range [0, " + std::to_string(size) +
                                "] for dimension " + std::to_string(axis) + " of " + shape_text(input.shape()));
  }
  const bool largest = context.attributes->get_int("largest", 1) != 0;
  const bool sorted = context.attributes->get_int("sorted", 1) != 0;
  std::vector<int64_t> shape = input.shape();
  shape[static_cast<size_t>(axis)] = k;
  Tensor values = Tensor::uninitialized(input.dtype(), shape);
  Tensor indices = Tensor::uninitialized(DType::Int64, shape);
  const Lines lines = lines_of(input.shape(), axis);
  if (k > 0 && lines.count() > 0) {
    const Tensor x = input.contiguous();
    switch (input.dtype()) {
      case DType::Float32: run_topk<float>(x, lines, k, largest, sorted, values, indices); break;
      case DType::Int32: run_topk<int32_t>(x, lines, k, largest, sorted, values, indices); break;
      default: run_topk<int64_t>(x, lines, k, largest, sorted, values, indices); break;
    }
  }
  (*context.outputs)[0] = std::move(values);
  (*context.outputs)[1] = std::move(indices);
  return Status::success();
}

// Attributes `axis` (default -1) and `descending` (default 0). Outputs: the sorted values
// and their int64 indices along `axis`, of x's shape.
Status sort_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  EDGERT_RETURN_IF_ERROR(check_input(context, input));
  int64_t axis = -1;
  EDGERT_RETURN_IF_ERROR(read_axis(context, input, axis));
  const bool descending = context.attributes != nullptr && context.attributes->get_int("descending", 0) != 0;
  Tensor values = Tensor::uninitialized(input.dtype(), input.shape());
  Tensor indices = Tensor::uninitialized(DType::Int64, input.shape());
  const Lines lines = lines_of(input.shape(), axis);
  if (lines.length > 0 && lines.count() > 0) {
    const Tensor x = input.contiguous();
    switch (input.dtype()) {
      case DType::Float32: run_sort<float>(x, lines, descending, values, indices); break;
      case DType::Int32: run_sort<int32_t>(x, lines, descending, values, indices); break;
      default: run_sort<int64_t>(x, lines, descending, values, indices); break;
    }
  }
  (*context.outputs)[0] = std::move(values);
  (*context.outputs)[1] = std::move(indices);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::topk", topk_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::topk", {{"k", AttributeKind::Int},
                                            {"axis", AttributeKind::Int},
                                            {"largest", AttributeKind::Int},
                                            {"sorted", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::sort", sort_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::sort", {{"axis", AttributeKind::Int}, {"descending", AttributeKind::Int}});

}  // namespace edgert::kernels
