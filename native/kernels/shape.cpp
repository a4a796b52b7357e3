// Layout kernels for every dtype: reshape, transpose, concat, slice, squeeze, unsqueeze,
// expand, split, pad, full_like and cast. Strided inputs are read in place.
//
// Views: values are immutable once a kernel has produced them (program_run.cpp), so an
// output may share its input's storage. reshape, squeeze, unsqueeze and an expand that adds
// no elements return views when the input is contiguous; slice and split return a view when
// the selected part is itself one contiguous block of the input. Every view these kernels
// return is contiguous, so consumers see the same layout as a fresh tensor; any other
// output is a new contiguous tensor.
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "common.hpp"
#include "edgert/threadpool.h"

namespace edgert::kernels {
namespace {

// ------------------------------------------------------------------------- attributes

const AttributeValue* find_attribute(const KernelContext& context, const char* name) {
  if (context.attributes == nullptr) return nullptr;
  const auto& all = context.attributes->all();
  auto found = all.find(name);
  return found == all.end() ? nullptr : &found->second;
}

// An int attribute, `fallback` when absent; another type is an error.
Status int_attribute(const KernelContext& context, const char* name, int64_t fallback, int64_t& value) {
  const AttributeValue* found = find_attribute(context, name);
  value = fallback;
  if (found == nullptr) return Status::success();
  if (const int64_t* number = std::get_if<int64_t>(found)) {
    value = *number;
    return Status::success();
  }
  return invalid(context, std::string("attribute ") + name + " must be an int");
}

Status required_int(const KernelContext& context, const char* name, int64_t& value) {
  if (find_attribute(context, name) == nullptr) {
    return invalid(context, std::string("attribute ") + name + " is required");
  }
  return int_attribute(context, name, 0, value);
}

// An ints attribute; `present` tells an absent one from an empty list.
Status ints_attribute(const KernelContext& context, const char* name, std::vector<int64_t>& value, bool& present) {
  const AttributeValue* found = find_attribute(context, name);
  present = found != nullptr;
  value.clear();
  if (found == nullptr) return Status::success();
  if (const auto* list = std::get_if<std::vector<int64_t>>(found)) {
    value = *list;
    return Status::success();
  }
  return invalid(context, std::string("attribute ") + name + " must be a list of ints");
}

Status required_ints(const KernelContext& context, const char* name, std::vector<int64_t>& value) {
  bool present = false;
  EDGERT_RETURN_IF_ERROR(ints_attribute(context, name, value, present));
  if (!present) return invalid(context, std::string("attribute ") + name + " is required");
  return Status::success();
}

// A float attribute (an int is accepted too); absent is an error when `required`.
Status float_attribute(const KernelContext& context, const char* name, bool required, double& value) {
  const AttributeValue* found = find_attribute(context, name);
  if (found == nullptr) {
    if (!required) return Status::success();
    return invalid(context, std::string("attribute ") + name + " is required");
  }
  if (const double* number = std::get_if<double>(found)) {
    value = *number;
  } else if (const int64_t* integer = std::get_if<int64_t>(found)) {
    value = static_cast<double>(*integer);
  } else {
    return invalid(context, std::string("attribute ") + name + " must be a float");
  }
  return Status::success();
}

// A dtype named by a string attribute ("float32", "int64", "bool", ...).
Status dtype_attribute(const KernelContext& context, const char* name, bool required, DType& dtype) {
  const AttributeValue* found = find_attribute(context, name);
  if (found == nullptr) {
    if (!required) return Status::success();
    return invalid(context, std::string("attribute ") + name + " is required");
  }
  const std::string* text = std::get_if<std::string>(found);
  if (text == nullptr) return invalid(context, std::string("attribute ") + name + " must be a string");
  for (uint32_t code = 0; dtype_is_valid(code); ++code) {
    if (*text == dtype_name(static_cast<DType>(code))) {
      dtype = static_cast<DType>(code);
      return Status::success();
    }
  }
  return invalid(context, std::string("attribute ") + name + ": unknown dtype '" + *text + "'");
}

// Resolves an axis attribute against `rank`, with an error naming the attribute.
Status resolve_axis(const KernelContext& context, const char* name, int64_t rank, int64_t& axis) {
  const int64_t given = axis;
  if (normalize_axis(axis, rank)) return Status::success();
  return invalid(context, std::string("attribute ") + name + " " + std::to_string(given) +
                              " is out of range for rank " + std::to_string(rank));
}

// ------------------------------------------------------------------ copies and views

// A copy's loop nest: dimensions that form one run in both layouts merged, size-1
// dimensions dropped, so the innermost loop is as long as possible.
struct CopyPlan {
  std::vector<int64_t> shape, source, target;  // strides in elements
};

CopyPlan plan_copy(const std::vector<int64_t>& shape, const std::vector<int64_t>& source_strides,
                   const std::vector<int64_t>& target_strides) {
  CopyPlan plan;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    if (!plan.shape.empty() && plan.source.back() == source_strides[d] * shape[d] &&
        plan.target.back() == target_strides[d] * shape[d]) {
      plan.shape.back() *= shape[d];
      plan.source.back() = source_strides[d];
      plan.target.back() = target_strides[d];
      continue;
    }
    plan.shape.push_back(shape[d]);
    plan.source.push_back(source_strides[d]);
    plan.target.push_back(target_strides[d]);
  }
  if (plan.shape.empty()) plan = {{1}, {1}, {1}};  // one element
  return plan;
}

// Copies rows [begin, end) of `plan` (a row runs along its last dimension).
void copy_rows(size_t element, const CopyPlan& plan, const char* source, char* target, int64_t begin, int64_t end) {
  const size_t outer = plan.shape.size() - 1;
  const int64_t length = plan.shape[outer];
  const int64_t bytes = static_cast<int64_t>(element);
  const bool runs = plan.source[outer] == 1 && plan.target[outer] == 1;
  std::vector<int64_t> index(outer, 0);
  int64_t source_offset = 0, target_offset = 0, rest = begin;
  for (size_t d = outer; d-- > 0;) {
    index[d] = rest % plan.shape[d];
    rest /= plan.shape[d];
    source_offset += index[d] * plan.source[d];
    target_offset += index[d] * plan.target[d];
  }
  for (int64_t row = begin; row < end; ++row) {
    const char* from = source + source_offset * bytes;
    char* to = target + target_offset * bytes;
    if (runs) {
      std::memcpy(to, from, static_cast<size_t>(length * bytes));
    } else {
      for (int64_t i = 0; i < length; ++i) {
        std::memcpy(to + i * plan.target[outer] * bytes, from + i * plan.source[outer] * bytes, element);
      }
    }
    for (size_t d = outer; d-- > 0;) {  // next row: odometer over the outer dimensions
      source_offset += plan.source[d];
      target_offset += plan.target[d];
      if (++index[d] < plan.shape[d]) break;
      source_offset -= plan.shape[d] * plan.source[d];
      target_offset -= plan.shape[d] * plan.target[d];
      index[d] = 0;
    }
  }
}

// Copies a region of `shape` between two strided layouts (zero source strides broadcast),
// rows split across the thread pool.
void copy_region(size_t element, const std::vector<int64_t>& shape, const char* source,
                 const std::vector<int64_t>& source_strides, char* target, const std::vector<int64_t>& target_strides) {
  if (product(shape, 0, shape.size()) == 0) return;
  const CopyPlan plan = plan_copy(shape, source_strides, target_strides);
  const int64_t length = plan.shape.back();
  const int64_t rows = product(plan.shape, 0, plan.shape.size() - 1);
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / length),
               [&](int64_t begin, int64_t end) { copy_rows(element, plan, source, target, begin, end); });
}

// A contiguous copy of `input` into a new tensor of `shape` (equal element count).
Tensor copy_as(const Tensor& input, std::vector<int64_t> shape) {
  Tensor out = Tensor::uninitialized(input.dtype(), std::move(shape));
  copy_region(dtype_size(input.dtype()), input.shape(), static_cast<const char*>(input.data()), input.strides(),
              static_cast<char*>(out.data()), Tensor::contiguous_strides(input.shape()));
  return out;
}

// The part of `base` of `shape` and `strides` starting `offset` elements into it: a view
// sharing base's storage when that part is contiguous (the view holds a copy of `base`,
// which keeps the storage alive), else a contiguous copy. An empty part is a new tensor.
Tensor view_or_copy(const Tensor& base, std::vector<int64_t> shape, std::vector<int64_t> strides, int64_t offset) {
  const char* start = static_cast<const char*>(base.data()) + offset * static_cast<int64_t>(dtype_size(base.dtype()));
  // Kernels never write their inputs: the view only ever reads this memory.
  Tensor view =
      Tensor::view(base.dtype(), shape, std::move(strides), const_cast<char*>(start), std::make_shared<Tensor>(base));
  if (view.numel() == 0) return Tensor(base.dtype(), std::move(shape));
  return view.is_contiguous() ? view : copy_as(view, std::move(shape));
}

// -------------------------------------------------------------------- reshape

// Dimensions listed in `keep` take the input's size at the same index.
Status apply_keep(const KernelContext& context, const Tensor& input, const std::vector<int64_t>& keep,
                  std::vector<int64_t>& shape) {
  const int64_t limit = std::min<int64_t>(static_cast<int64_t>(shape.size()), input.dim());
  for (int64_t index : keep) {
    if (index < 0 || index >= limit) {
      return invalid(context, "attribute keep: index " + std::to_string(index) + " is outside [0, " +
                                  std::to_string(limit) + ") (shape " + shape_text(shape) + ", input " +
                                  shape_text(input.shape()) + ")");
    }
    shape[static_cast<size_t>(index)] = input.shape()[static_cast<size_t>(index)];
  }
  return Status::success();
}

// Sets shape[out] = input.shape[in] * factor for each (out, in, factor) triple of `scaled`:
// a dimension known only at run time that is another one times a constant (a batch merged
// with static dimensions).
Status apply_scaled(const KernelContext& context, const Tensor& input, const std::vector<int64_t>& scaled,
                    std::vector<int64_t>& shape) {
  if (scaled.size() % 3 != 0) {
    return invalid(context, "attribute scaled must hold (output index, input index, factor) triples, got " +
                                std::to_string(scaled.size()) + " values");
  }
  for (size_t i = 0; i < scaled.size(); i += 3) {
    const int64_t out = scaled[i], in = scaled[i + 1], factor = scaled[i + 2];
    if (out < 0 || out >= static_cast<int64_t>(shape.size()) || in < 0 || in >= input.dim() || factor < 1) {
      return invalid(context, "attribute scaled: (" + std::to_string(out) + ", " + std::to_string(in) + ", " +
                                  std::to_string(factor) + ") names no output dimension of " + shape_text(shape) +
                                  ", no input dimension of " + shape_text(input.shape()) + " or a factor below 1");
    }
    int64_t size = 0;
    if (__builtin_mul_overflow(input.shape()[static_cast<size_t>(in)], factor, &size)) {
      return invalid(context, "attribute scaled: dimension " + std::to_string(out) + " is too large");
    }
    shape[static_cast<size_t>(out)] = size;
  }
  return Status::success();
}

// Replaces a single -1 in `shape` by the size that makes the element count match `count`.
Status infer_shape(const KernelContext& context, const Tensor& input, std::vector<int64_t>& shape) {
  int64_t known = 1;
  int64_t inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1 && inferred < 0) {
      inferred = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      return invalid(context, "attribute shape " + shape_text(shape) + " may hold one -1 and sizes >= 0");
    } else if (__builtin_mul_overflow(known, shape[i], &known) || known > kMaxTensorBytes) {
      return invalid(context, "attribute shape " + shape_text(shape) + " is too large");
    }
  }
  const int64_t count = input.numel();
  if (inferred >= 0) {
    if (known == 0 || count % known != 0) {
      return invalid(context, "cannot reshape " + shape_text(input.shape()) + " into " + shape_text(shape));
    }
    shape[static_cast<size_t>(inferred)] = count / known;
  } else if (known != count) {
    return invalid(context, "cannot reshape " + shape_text(input.shape()) + " (" + std::to_string(count) +
                                " elements) into " + shape_text(shape));
  }
  return Status::success();
}

// Attributes `shape` (one -1 allowed), `keep` and `scaled`. A view when the input is contiguous.
Status reshape_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  std::vector<int64_t> shape, keep, scaled;
  bool present = false;
  EDGERT_RETURN_IF_ERROR(ints_attribute(context, "shape", shape, present));
  EDGERT_RETURN_IF_ERROR(ints_attribute(context, "keep", keep, present));
  EDGERT_RETURN_IF_ERROR(ints_attribute(context, "scaled", scaled, present));
  EDGERT_RETURN_IF_ERROR(apply_keep(context, input, keep, shape));
  EDGERT_RETURN_IF_ERROR(apply_scaled(context, input, scaled, shape));
  EDGERT_RETURN_IF_ERROR(infer_shape(context, input, shape));
  (*context.outputs)[0] = input.is_contiguous() ? input.reshaped(std::move(shape)) : copy_as(input, std::move(shape));
  return Status::success();
}

// ------------------------------------------------------------ transpose, concat

// Attribute `perm`: output dimension i is input dimension perm[i]; absent reverses the dims.
Status transpose_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  const int64_t rank = input.dim();
  std::vector<int64_t> perm = context.attributes ? context.attributes->get_ints("perm") : std::vector<int64_t>{};
  if (perm.empty()) {
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t& axis : perm) {
    if (!valid || !normalize_axis(axis, rank) || seen[static_cast<size_t>(axis)]) {
      valid = false;
      break;
    }
    seen[static_cast<size_t>(axis)] = true;
  }
  if (!valid) {
    return invalid(context, "attribute perm must be a permutation of the " + std::to_string(rank) + " dimensions of " +
                                shape_text(input.shape()));
  }
  std::vector<int64_t> shape, strides;
  for (int64_t axis : perm) {
    shape.push_back(input.shape()[static_cast<size_t>(axis)]);
    strides.push_back(input.strides()[static_cast<size_t>(axis)]);
  }
  Tensor out = Tensor::uninitialized(input.dtype(), shape);
  copy_region(dtype_size(input.dtype()), shape, static_cast<const char*>(input.data()), strides,
              static_cast<char*>(out.data()), out.strides());
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// Attribute `axis` (default 0); inputs share dtype, rank and every other dimension.
Status concat_kernel(KernelContext& context) {
  if (context.inputs.empty()) return invalid(context, "expected at least one input");
  EDGERT_RETURN_IF_ERROR(check_arity(context, context.inputs.size(), context.inputs.size()));
  const Tensor& first = *context.inputs[0];
  int64_t axis = context.attributes ? context.attributes->get_int("axis", 0) : 0;
  if (!normalize_axis(axis, first.dim())) {
    return invalid(context, "axis is out of range for inputs of rank " + std::to_string(first.dim()));
  }
  std::vector<int64_t> shape = first.shape();
  shape[static_cast<size_t>(axis)] = 0;
  for (const Tensor* input : context.inputs) {
    if (input->dtype() != first.dtype()) {
      return invalid(context, std::string("inputs have dtypes ") + dtype_name(first.dtype()) + " and " +
                                  dtype_name(input->dtype()) + "; all must have the same dtype");
    }
    bool match = input->dim() == first.dim();
    for (int64_t d = 0; match && d < first.dim(); ++d) {
      match = d == axis || input->shape()[static_cast<size_t>(d)] == first.shape()[static_cast<size_t>(d)];
    }
    if (!match) {
      return invalid(context, "shapes " + shape_text(first.shape()) + " and " + shape_text(input->shape()) +
                                  " differ outside axis " + std::to_string(axis));
    }
    shape[static_cast<size_t>(axis)] += input->shape()[static_cast<size_t>(axis)];
  }
  Tensor out(first.dtype(), shape);
  const size_t element = dtype_size(first.dtype());
  const int64_t slice_stride = out.strides()[static_cast<size_t>(axis)];
  int64_t position = 0;
  for (const Tensor* input : context.inputs) {
    if (out.numel() > 0 && input->numel() > 0) {
      char* target = static_cast<char*>(out.data()) + position * slice_stride * static_cast<int64_t>(element);
      copy_region(element, input->shape(), static_cast<const char*>(input->data()), input->strides(), target,
                  out.strides());
    }
    position += input->shape()[static_cast<size_t>(axis)];
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// ------------------------------------------------------------------------ slice

// Python's rule for a slice bound: negative counts from the end, then clamped to [0, size].
int64_t clamp_bound(int64_t bound, int64_t size) {
  if (bound < 0) bound = std::max<int64_t>(bound + size, 0);  // bound + size cannot overflow
  return std::min(bound, size);
}

// Attributes `axis` (default 0), `start` (default 0), `end` (default INT64_MAX), `step`
// (>= 1, default 1): x[start:end:step] along axis.
Status slice_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  int64_t axis = 0, start = 0, end = 0, step = 1;
  EDGERT_RETURN_IF_ERROR(int_attribute(context, "axis", 0, axis));
  EDGERT_RETURN_IF_ERROR(int_attribute(context, "start", 0, start));
  EDGERT_RETURN_IF_ERROR(int_attribute(context, "end", std::numeric_limits<int64_t>::max(), end));
  EDGERT_RETURN_IF_ERROR(int_attribute(context, "step", 1, step));
  EDGERT_RETURN_IF_ERROR(resolve_axis(context, "axis", input.dim(), axis));
  if (step < 1) return invalid(context, "attribute step must be >= 1, got " + std::to_string(step));
  const size_t a = static_cast<size_t>(axis);
  const int64_t size = input.shape()[a];
  start = clamp_bound(start, size);
  end = clamp_bound(end, size);
  const int64_t count = end > start ? (end - start - 1) / step + 1 : 0;
  std::vector<int64_t> shape = input.shape(), strides = input.strides();
  shape[a] = count;
  // With two or more elements step < size, so the product stays within the tensor's extent.
  if (count > 1) strides[a] *= step;
  const int64_t offset = count > 0 ? start * input.strides()[a] : 0;
  (*context.outputs)[0] = view_or_copy(input, std::move(shape), std::move(strides), offset);
  return Status::success();
}

// --------------------------------------------------------- squeeze, unsqueeze

// Which dimensions `axes` names (duplicates and out-of-range axes are errors).
Status named_axes(const KernelContext& context, const std::vector<int64_t>& axes, int64_t rank,
                  std::vector<bool>& named) {
  named.assign(static_cast<size_t>(rank), false);
  for (int64_t axis : axes) {
    EDGERT_RETURN_IF_ERROR(resolve_axis(context, "axes", rank, axis));
    if (named[static_cast<size_t>(axis)]) {
      return invalid(context, "attribute axes names dimension " + std::to_string(axis) + " twice");
    }
    named[static_cast<size_t>(axis)] = true;
  }
  return Status::success();
}

// Attribute `axes`: the size-1 dimensions among them are removed (others are kept, as
// torch.squeeze does); absent: every size-1 dimension. A view when x is contiguous.
Status squeeze_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  std::vector<int64_t> axes;
  bool present = false;
  EDGERT_RETURN_IF_ERROR(ints_attribute(context, "axes", axes, present));
  std::vector<bool> named(static_cast<size_t>(input.dim()), true);
  if (present) EDGERT_RETURN_IF_ERROR(named_axes(context, axes, input.dim(), named));
  std::vector<int64_t> shape, strides;
  for (size_t d = 0; d < input.shape().size(); ++d) {
    if (named[d] && input.shape()[d] == 1) continue;
    shape.push_back(input.shape()[d]);
    strides.push_back(input.strides()[d]);
  }
  (*context.outputs)[0] = view_or_copy(input, std::move(shape), std::move(strides), 0);
  return Status::success();
}

// Attribute `axis` in [-rank-1, rank]: a dimension of size 1 inserted there. A view when x is
// contiguous.
Status unsqueeze_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  int64_t axis = 0;
  EDGERT_RETURN_IF_ERROR(required_int(context, "axis", axis));
  EDGERT_RETURN_IF_ERROR(resolve_axis(context, "axis", input.dim() + 1, axis));
  std::vector<int64_t> shape = input.shape(), strides = input.strides();
  shape.insert(shape.begin() + axis, 1);
  strides.insert(strides.begin() + axis, 1);  // any stride suits a dimension of size 1
  (*context.outputs)[0] = view_or_copy(input, std::move(shape), std::move(strides), 0);
  return Status::success();
}

// ----------------------------------------------------------------------- expand

// The output dimension `index` of expand, its source stride (0 where a size-1 dimension is
// broadcast), from the requested `size` (-1 keeps x's) and x's dimension `index - lead`.
Status expand_dimension(const KernelContext& context, const Tensor& input, size_t index, size_t lead, int64_t& size,
                        int64_t& stride) {
  const std::string where = "attribute shape: dimension " + std::to_string(index) + " (" + std::to_string(size) + ")";
  if (index < lead) {
    if (size < 0) return invalid(context, where + " is new and must be >= 0");
    stride = 0;
    return Status::success();
  }
  const int64_t own = input.shape()[index - lead];
  stride = input.strides()[index - lead];
  if (size == -1 || size == own) {
    size = own;
  } else if (own == 1 && size >= 0) {
    stride = 0;
  } else {
    return invalid(context, where + " cannot expand " + shape_text(input.shape()) + "'s size " + std::to_string(own));
  }
  return Status::success();
}

// Attribute `shape`: x broadcast to it (numpy rules; new dimensions lead). A view when it
// adds no elements and x is contiguous; otherwise a contiguous copy.
Status expand_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  std::vector<int64_t> shape;
  EDGERT_RETURN_IF_ERROR(required_ints(context, "shape", shape));
  if (shape.size() < input.shape().size()) {
    return invalid(context,
                   "attribute shape " + shape_text(shape) + " has fewer dimensions than " + shape_text(input.shape()));
  }
  const size_t lead = shape.size() - input.shape().size();
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    EDGERT_RETURN_IF_ERROR(expand_dimension(context, input, i, lead, shape[i], strides[i]));
  }
  int64_t count = 0;
  if (!checked_element_count(shape, dtype_size(input.dtype()), &count)) {
    return invalid(context, "attribute shape " + shape_text(shape) + " is too large");
  }
  (*context.outputs)[0] = view_or_copy(input, std::move(shape), std::move(strides), 0);
  return Status::success();
}

// ------------------------------------------------------------------------ split

// Attributes `axis` (default 0) and `sizes` (>= 0, summing to x's dimension): one output per
// size, each a view when it is one contiguous block of x.
Status split_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  int64_t axis = 0;
  std::vector<int64_t> sizes;
  EDGERT_RETURN_IF_ERROR(int_attribute(context, "axis", 0, axis));
  EDGERT_RETURN_IF_ERROR(required_ints(context, "sizes", sizes));
  EDGERT_RETURN_IF_ERROR(resolve_axis(context, "axis", input.dim(), axis));
  if (sizes.size() != context.outputs->size()) {
    return invalid(context, "attribute sizes has " + std::to_string(sizes.size()) + " entries for " +
                                std::to_string(context.outputs->size()) + " outputs");
  }
  const size_t a = static_cast<size_t>(axis);
  const int64_t total = input.shape()[a];
  int64_t position = 0;
  for (int64_t size : sizes) {
    if (size < 0 || size > total - position) {
      return invalid(context, "attribute sizes " + shape_text(sizes) + " must be >= 0 and sum to " +
                                  std::to_string(total) + " (dimension " + std::to_string(axis) + ")");
    }
    position += size;
  }
  if (position != total) {
    return invalid(context, "attribute sizes " + shape_text(sizes) + " sums to " + std::to_string(position) +
                                ", not to dimension " + std::to_string(axis) + "'s size " + std::to_string(total));
  }
  position = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    std::vector<int64_t> shape = input.shape();
    shape[a] = sizes[i];
    (*context.outputs)[i] = view_or_copy(input, std::move(shape), input.strides(), position * input.strides()[a]);
    position += sizes[i];
  }
  return Status::success();
}

// --------------------------------------------------- conversions, fill, cast

// Bool elements: one byte, any non-zero byte reads as true.
struct BoolByte {
  uint8_t byte;
};

// One element converted by cast's rules: float to integer rounds toward zero, saturates and
// maps NaN to 0; integer to integer wraps (two's complement); to bool is `x != 0`; from bool
// gives 0 or 1.
template <class To, class From>
To convert(From value) {
  if constexpr (std::is_same_v<From, BoolByte>) {
    return convert<To>(static_cast<int32_t>(value.byte != 0));
  } else if constexpr (std::is_same_v<To, BoolByte>) {
    return BoolByte{static_cast<uint8_t>(value != 0)};
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    using Limits = std::numeric_limits<To>;
    if (std::isnan(value)) return 0;
    // The range is [min, 2^digits): both bounds are 0 or powers of two, exact in float.
    const From upper = std::ldexp(From{1}, Limits::digits);
    if (value <= static_cast<From>(Limits::min())) return Limits::min();
    if (value >= upper) return Limits::max();
    return static_cast<To>(value);  // in range: truncates toward zero
  } else if constexpr (std::is_integral_v<To> && std::is_integral_v<From> && sizeof(To) < sizeof(From)) {
    return static_cast<To>(static_cast<std::make_unsigned_t<From>>(value));  // keeps the low bits
  } else {
    return static_cast<To>(value);
  }
}

// Calls fn(T{}) with the element type stored for `dtype`.
template <class Fn>
void with_type(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::Float32: return fn(float{});
    case DType::Int8: return fn(int8_t{});
    case DType::UInt8: return fn(uint8_t{});
    case DType::Int32: return fn(int32_t{});
    case DType::Int64: return fn(int64_t{});
    case DType::Bool: return fn(BoolByte{});
  }
}

// Every element of contiguous `out` set to `value` converted to out's dtype.
void fill(Tensor& out, double value) {
  with_type(out.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T converted = convert<T>(value);
    T* data = static_cast<T*>(out.data());
    std::fill(data, data + out.numel(), converted);
  });
}

// Attributes `value` (float) and `dtype` (absent: x's): x's shape filled with value,
// converted as cast converts it.
Status full_like_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  double value = 0;
  DType dtype = input.dtype();
  EDGERT_RETURN_IF_ERROR(float_attribute(context, "value", true, value));
  EDGERT_RETURN_IF_ERROR(dtype_attribute(context, "dtype", false, dtype));
  Tensor out = Tensor::uninitialized(dtype, input.shape());
  fill(out, value);
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

template <class To, class From>
void convert_all(const From* source, To* target, int64_t count) {
  parallel_for(0, count, kParallelGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) target[i] = convert<To>(source[i]);
  });
}

// Attribute `dtype`: every element converted (see convert).
Status cast_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  DType dtype = input.dtype();
  EDGERT_RETURN_IF_ERROR(dtype_attribute(context, "dtype", true, dtype));
  const Tensor source = input.is_contiguous() ? input : copy_as(input, input.shape());
  Tensor out = Tensor::uninitialized(dtype, input.shape());
  with_type(input.dtype(), [&](auto from) {
    with_type(dtype, [&](auto to) {
      convert_all(static_cast<const decltype(from)*>(source.data()), static_cast<decltype(to)*>(out.data()),
                  out.numel());
    });
  });
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// -------------------------------------------------------------------------- pad

// One dimension of pad: the output size and the overlap of input and output.
struct PadRange {
  int64_t size = 0;          // output size
  int64_t source_begin = 0;  // first input index copied
  int64_t target_begin = 0;  // where it lands in the output
  int64_t length = 0;        // how many are copied (0: none)
};

// Bounds the pads so that every sum below stays far from overflow.
constexpr int64_t kMaxPad = kMaxTensorBytes;

Status pad_range(const KernelContext& context, int64_t size, int64_t before, int64_t after, size_t dimension,
                 PadRange& range) {
  if (before < -kMaxPad || before > kMaxPad || after < -kMaxPad || after > kMaxPad) {
    return invalid(context, "attribute pads: dimension " + std::to_string(dimension) + " pads (" +
                                std::to_string(before) + ", " + std::to_string(after) +
                                ") are out of range [-2^48, 2^48]");
  }
  range.size = size + before + after;
  if (range.size < 0) {
    return invalid(context, "attribute pads: dimension " + std::to_string(dimension) + " of size " +
                                std::to_string(size) + " padded by (" + std::to_string(before) + ", " +
                                std::to_string(after) + ") would have a negative size");
  }
  range.source_begin = std::max<int64_t>(0, -before);
  range.target_begin = std::max<int64_t>(0, before);
  range.length = std::max<int64_t>(0, size - std::max<int64_t>(0, -after) - range.source_begin);
  return Status::success();
}

// Every dimension's PadRange from `pads` ((before, after) pairs, last dimension first;
// dimensions they do not reach are not padded).
Status pad_ranges(const KernelContext& context, const Tensor& input, const std::vector<int64_t>& pads,
                  std::vector<PadRange>& ranges) {
  const size_t rank = input.shape().size();
  if (pads.size() % 2 != 0 || pads.size() > 2 * rank) {
    return invalid(context, "attribute pads must hold (before, after) pairs for at most the " + std::to_string(rank) +
                                " dimensions, got " + std::to_string(pads.size()) + " values");
  }
  ranges.resize(rank);
  for (size_t d = 0; d < rank; ++d) {
    const size_t pair = rank - 1 - d;
    const bool padded = 2 * pair < pads.size();
    EDGERT_RETURN_IF_ERROR(pad_range(context, input.shape()[d], padded ? pads[2 * pair] : 0,
                                     padded ? pads[2 * pair + 1] : 0, d, ranges[d]));
  }
  return Status::success();
}

// Copies the part of `input` that the ranges keep into its place in `out`.
void copy_kept(const Tensor& input, const std::vector<PadRange>& ranges, Tensor& out) {
  std::vector<int64_t> kept;
  int64_t source_offset = 0, target_offset = 0;
  for (size_t d = 0; d < ranges.size(); ++d) {
    kept.push_back(ranges[d].length);
    source_offset += ranges[d].source_begin * input.strides()[d];
    target_offset += ranges[d].target_begin * out.strides()[d];
  }
  if (product(kept, 0, kept.size()) == 0) return;
  const size_t element = dtype_size(input.dtype());
  const int64_t bytes = static_cast<int64_t>(element);
  copy_region(element, kept, static_cast<const char*>(input.data()) + source_offset * bytes, input.strides(),
              static_cast<char*>(out.data()) + target_offset * bytes, out.strides());
}

// reflect and replicate padding: output index i of a dimension reads input index
// i - before reflected about the first and last elements (reflect: -1 reads 1) or clamped to
// them (replicate). Reflect needs each pad below the dimension's size, replicate an input
// that is not empty along a padded dimension (torch's rules).
enum class PadMode { Constant, Reflect, Replicate };

Status pad_mode(const KernelContext& context, PadMode& mode) {
  const std::string name = context.attributes ? context.attributes->get_string("mode", "constant") : "constant";
  if (name == "constant")
    mode = PadMode::Constant;
  else if (name == "reflect")
    mode = PadMode::Reflect;
  else if (name == "replicate")
    mode = PadMode::Replicate;
  else
    return invalid(context, "attribute mode must be \"constant\", \"reflect\" or \"replicate\", got \"" + name + "\"");
  return Status::success();
}

// Per dimension, the input element offset each output index reads (index times stride).
Status edge_offsets(const KernelContext& context, const Tensor& input, const std::vector<int64_t>& pads,
                    const std::vector<PadRange>& ranges, PadMode mode, std::vector<std::vector<int64_t>>& offsets) {
  const size_t rank = ranges.size();
  offsets.assign(rank, {});
  for (size_t d = 0; d < rank; ++d) {
    const size_t pair = rank - 1 - d;
    const int64_t before = 2 * pair < pads.size() ? pads[2 * pair] : 0;
    const int64_t after = 2 * pair < pads.size() ? pads[2 * pair + 1] : 0;
    const int64_t size = input.shape()[d];
    if (ranges[d].size > 0 && (before > 0 || after > 0)) {
      if (mode == PadMode::Reflect && (before >= size || after >= size)) {
        return invalid(context, "attribute pads: reflect padding (" + std::to_string(before) + ", " +
                                    std::to_string(after) + ") of dimension " + std::to_string(d) +
                                    " must be below its size " + std::to_string(size));
      }
      if (size == 0) {
        return invalid(context, "attribute pads: dimension " + std::to_string(d) +
                                    " is empty and cannot be padded by " + "replicating its elements");
      }
    }
    std::vector<int64_t>& map = offsets[d];
    map.resize(static_cast<size_t>(ranges[d].size));
    for (int64_t i = 0; i < ranges[d].size; ++i) {
      int64_t j = i - before;
      if (mode == PadMode::Reflect) {
        if (j < 0) j = -j;
        if (j >= size) j = 2 * (size - 1) - j;
      } else {
        j = std::min(std::max<int64_t>(j, 0), size - 1);
      }
      map[static_cast<size_t>(i)] = j * input.strides()[d];
    }
  }
  return Status::success();
}

// out[i0, ..., ik] = input[offsets[0][i0] + ... + offsets[k][ik]], rows along the last
// dimension split across the pool.
template <class T>
void gather_offsets(const T* source, const std::vector<std::vector<int64_t>>& offsets,
                    const std::vector<int64_t>& shape, T* out) {
  if (shape.empty()) {
    out[0] = source[0];
    return;
  }
  const size_t last = shape.size() - 1;
  const int64_t width = shape[last];
  const int64_t rows = product(shape, 0, last);
  if (width == 0 || rows == 0) return;
  const std::vector<int64_t>& columns = offsets[last];
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / width), [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t base = 0, rest = row;
      for (size_t d = last; d-- > 0;) {
        base += offsets[d][static_cast<size_t>(rest % shape[d])];
        rest /= shape[d];
      }
      T* target = out + row * width;
      for (int64_t i = 0; i < width; ++i) target[i] = source[base + columns[static_cast<size_t>(i)]];
    }
  });
}

void pad_edges(const Tensor& input, const std::vector<std::vector<int64_t>>& offsets, Tensor& out) {
  switch (dtype_size(input.dtype())) {
    case 1:
      return gather_offsets(static_cast<const uint8_t*>(input.data()), offsets, out.shape(),
                            static_cast<uint8_t*>(out.data()));
    case 4:
      return gather_offsets(static_cast<const uint32_t*>(input.data()), offsets, out.shape(),
                            static_cast<uint32_t*>(out.data()));
    default:
      return gather_offsets(static_cast<const uint64_t*>(input.data()), offsets, out.shape(),
                            static_cast<uint64_t*>(out.data()));
  }
}

// Attributes `pads` ((before, after) pairs, last dimension first; negative crops), `mode`
// ("constant" (default), "reflect" or "replicate") and `value` (constant mode; default 0,
// converted as cast converts it).
Status pad_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  const DType dtype = input.dtype();
  if (dtype != DType::Float32 && dtype != DType::Int32 && dtype != DType::Int64 && dtype != DType::Bool) {
    return invalid(context, std::string("input must be float32, int32, int64 or bool, got ") + dtype_name(dtype));
  }
  std::vector<int64_t> pads;
  double value = 0;
  EDGERT_RETURN_IF_ERROR(required_ints(context, "pads", pads));
  EDGERT_RETURN_IF_ERROR(float_attribute(context, "value", false, value));
  std::vector<PadRange> ranges;
  EDGERT_RETURN_IF_ERROR(pad_ranges(context, input, pads, ranges));
  std::vector<int64_t> shape;
  for (const PadRange& range : ranges) shape.push_back(range.size);
  int64_t count = 0;
  if (!checked_element_count(shape, dtype_size(dtype), &count)) {
    return invalid(context, "the padded shape " + shape_text(shape) + " is too large");
  }
  PadMode mode = PadMode::Constant;
  EDGERT_RETURN_IF_ERROR(pad_mode(context, mode));
  Tensor out = Tensor::uninitialized(dtype, shape);
  if (mode == PadMode::Constant) {
    fill(out, value);
    copy_kept(input, ranges, out);
  } else {
    std::vector<std::vector<int64_t>> offsets;
    EDGERT_RETURN_IF_ERROR(edge_offsets(context, input, pads, ranges, mode, offsets));
    pad_edges(input, offsets, out);
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::reshape", reshape_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::reshape", {{"shape", AttributeKind::Ints},
                                               {"keep", AttributeKind::Ints},
                                               {"scaled", AttributeKind::Ints}});
EDGERT_REGISTER_OPERATOR("edgert::transpose", transpose_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::transpose", {{"perm", AttributeKind::Ints}});
EDGERT_REGISTER_OPERATOR("edgert::concat", concat_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::concat", {{"axis", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::slice", slice_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::slice", {{"axis", AttributeKind::Int},
                                             {"start", AttributeKind::Int},
                                             {"end", AttributeKind::Int},
                                             {"step", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::squeeze", squeeze_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::squeeze", {{"axes", AttributeKind::Ints}});
EDGERT_REGISTER_OPERATOR("edgert::unsqueeze", unsqueeze_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::unsqueeze", {{"axis", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::expand", expand_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::expand", {{"shape", AttributeKind::Ints}});
EDGERT_REGISTER_OPERATOR("edgert::split", split_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::split", {{"axis", AttributeKind::Int}, {"sizes", AttributeKind::Ints}});
EDGERT_REGISTER_OPERATOR("edgert::pad", pad_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::pad", {{"pads", AttributeKind::Ints},
                                           {"value", AttributeKind::Float},
                                           {"mode", AttributeKind::String}});
EDGERT_REGISTER_OPERATOR("edgert::full_like", full_like_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::full_like", {{"value", AttributeKind::Float}, {"dtype", AttributeKind::String}});
EDGERT_REGISTER_OPERATOR("edgert::cast", cast_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::cast", {{"dtype", AttributeKind::String}});

}  // namespace edgert::kernels
