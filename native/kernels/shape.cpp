// Layout kernels for every dtype: reshape, transpose and concat. Outputs are contiguous
// copies; strided inputs are read in place.
#include "common.hpp"

namespace edgert::kernels {
namespace {

// A contiguous copy of `input` into a tensor of `shape` (equal element count).
Tensor copy_as(const Tensor& input, std::vector<int64_t> shape) {
  Tensor out(input.dtype(), std::move(shape));
  copy_strided(dtype_size(input.dtype()), input.shape(),
               static_cast<const char*>(input.data()), input.strides(),
               static_cast<char*>(out.data()), Tensor::contiguous_strides(input.shape()));
  return out;
}

// Attribute `shape`; at most one -1, inferred from the element count.
Status reshape_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 1, 1));
  const Tensor& input = *context.inputs[0];
  std::vector<int64_t> shape = context.attributes ? context.attributes->get_ints("shape") : std::vector<int64_t>{};
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
  (*context.outputs)[0] = copy_as(input, std::move(shape));
  return Status::success();
}

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
    return invalid(context, "attribute perm must be a permutation of the " + std::to_string(rank) +
                                " dimensions of " + shape_text(input.shape()));
  }
  std::vector<int64_t> shape, strides;
  for (int64_t axis : perm) {
    shape.push_back(input.shape()[static_cast<size_t>(axis)]);
    strides.push_back(input.strides()[static_cast<size_t>(axis)]);
  }
  Tensor out(input.dtype(), shape);
  copy_strided(dtype_size(input.dtype()), shape, static_cast<const char*>(input.data()), strides,
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
      copy_strided(element, input->shape(), static_cast<const char*>(input->data()), input->strides(),
                   target, out.strides());
    }
    position += input->shape()[static_cast<size_t>(axis)];
  }
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::reshape", reshape_kernel);
EDGERT_REGISTER_OPERATOR("edgert::transpose", transpose_kernel);
EDGERT_REGISTER_OPERATOR("edgert::concat", concat_kernel);

}  // namespace edgert::kernels
