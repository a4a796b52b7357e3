// Helpers shared by the CPU kernels: argument checks, broadcasting and strided copies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "edgert/registry.hpp"
#include "edgert/status.hpp"
#include "edgert/tensor.hpp"

namespace edgert::kernels {

// Elements per chunk below which splitting work across threads does not pay.
constexpr int64_t kParallelGrain = 32768;

// The executor prefixes kernel errors with the operator name.
inline Status invalid(const KernelContext&, const std::string& message) {
  return Status(Code::InvalidArgument, message);
}

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Checks the input count (absent optional inputs included) and that there is one output.
inline Status check_arity(const KernelContext& context, size_t min_inputs, size_t max_inputs) {
  const size_t count = context.inputs.size();
  if (count < min_inputs || count > max_inputs) {
    return invalid(context, "expected " + std::to_string(min_inputs) +
                                (max_inputs != min_inputs ? " to " + std::to_string(max_inputs) : "") +
                                " inputs, got " + std::to_string(count));
  }
  for (size_t i = 0; i < min_inputs; ++i) {
    if (context.inputs[i] == nullptr) {
      return invalid(context, "input " + std::to_string(i) + " is required");
    }
  }
  if (context.outputs == nullptr || context.outputs->empty()) {
    return invalid(context, "expected one output");
  }
  return Status::success();
}

// The tensor at `index`, or null when absent.
inline const Tensor* optional_input(const KernelContext& context, size_t index) {
  return index < context.inputs.size() ? context.inputs[index] : nullptr;
}

inline Status check_dtype(const KernelContext& context, const Tensor& tensor, DType dtype, const char* what) {
  if (tensor.dtype() == dtype) return Status::success();
  return invalid(context, std::string(what) + " must be " + dtype_name(dtype) + ", got " + dtype_name(tensor.dtype()));
}

// Resolves a possibly negative axis against `rank`; false when out of range.
inline bool normalize_axis(int64_t& axis, int64_t rank) {
  if (axis < 0) axis += rank;
  return axis >= 0 && axis < rank;
}

inline int64_t product(const std::vector<int64_t>& shape, size_t begin, size_t end) {
  int64_t result = 1;
  for (size_t i = begin; i < end; ++i) result *= shape[i];
  return result;
}

// Output shape and per-input element strides (0 along broadcast dimensions).
struct Broadcast {
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> strides;
};

// numpy broadcasting of the inputs' shapes; each input keeps its own strides, so strided
// (non-contiguous) inputs are read in place.
inline Status broadcast(const KernelContext& context, const std::vector<const Tensor*>& inputs, Broadcast& plan) {
  size_t rank = 0;
  for (const Tensor* tensor : inputs) rank = std::max(rank, tensor->shape().size());
  plan.shape.assign(rank, 1);
  for (const Tensor* tensor : inputs) {
    const size_t offset = rank - tensor->shape().size();
    for (size_t i = 0; i < tensor->shape().size(); ++i) {
      const int64_t size = tensor->shape()[i];
      int64_t& out = plan.shape[offset + i];
      if (size == out || size == 1) continue;
      if (out != 1) {
        std::string shapes;
        for (const Tensor* t : inputs) shapes += (shapes.empty() ? "" : " and ") + shape_text(t->shape());
        return invalid(context, "shapes " + shapes + " cannot be broadcast together");
      }
      out = size;
    }
  }
  plan.strides.clear();
  for (const Tensor* tensor : inputs) {
    std::vector<int64_t> strides(rank, 0);
    const size_t offset = rank - tensor->shape().size();
    for (size_t i = 0; i < tensor->shape().size(); ++i) {
      if (tensor->shape()[i] != 1) strides[offset + i] = tensor->strides()[i];
    }
    plan.strides.push_back(std::move(strides));
  }
  return Status::success();
}

// Element offsets of every input for output row `row` (a row runs along the last dimension).
inline void row_offsets(const Broadcast& plan, int64_t row, int64_t* offsets) {
  const size_t count = plan.strides.size();
  for (size_t t = 0; t < count; ++t) offsets[t] = 0;
  if (plan.shape.empty()) return;
  for (size_t d = plan.shape.size() - 1; d-- > 0;) {
    const int64_t index = row % plan.shape[d];
    row /= plan.shape[d];
    for (size_t t = 0; t < count; ++t) offsets[t] += index * plan.strides[t][d];
  }
}

// Copies a strided tensor of `shape` into another strided layout, element by element.
inline void copy_strided(size_t element_size, const std::vector<int64_t>& shape, const char* source,
                         const std::vector<int64_t>& source_strides, char* target,
                         const std::vector<int64_t>& target_strides) {
  const int64_t count = product(shape, 0, shape.size());
  if (count == 0) return;
  const size_t rank = shape.size();
  std::vector<int64_t> index(rank, 0);
  int64_t source_offset = 0, target_offset = 0;
  for (int64_t n = 0; n < count; ++n) {
    std::memcpy(target + target_offset * static_cast<int64_t>(element_size),
                source + source_offset * static_cast<int64_t>(element_size), element_size);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) {
        source_offset += source_strides[d];
        target_offset += target_strides[d];
        break;
      }
      source_offset -= (shape[d] - 1) * source_strides[d];
      target_offset -= (shape[d] - 1) * target_strides[d];
      index[d] = 0;
    }
  }
}

}  // namespace edgert::kernels
