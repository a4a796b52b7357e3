// gather, index_select and embedding: elements or rows of any dtype picked by int32/int64
// indices (docs/operators.md). Every index is checked against [0, size) before anything is
// copied; one outside, negative ones included (torch's semantics), is an error naming it.
// Outputs are new contiguous tensors; strided inputs are read in place where rows stay
// contiguous, else through one contiguous copy.
#include "common.hpp"
#include "edgert/threadpool.h"

namespace edgert::kernels {
namespace {

// The int attribute `axis`, which these operators require.
Status required_axis(const KernelContext& context, int64_t rank, int64_t& axis) {
  if (context.attributes == nullptr || !context.attributes->has("axis")) {
    return invalid(context, "attribute axis is required");
  }
  const int64_t* value = std::get_if<int64_t>(&context.attributes->all().at("axis"));
  if (value == nullptr) return invalid(context, "attribute axis must be an int");
  axis = *value;
  if (normalize_axis(axis, rank)) return Status::success();
  return invalid(context,
                 "attribute axis " + std::to_string(*value) + " is out of range for rank " + std::to_string(rank));
}

Status check_index_dtype(const KernelContext& context, const Tensor& index, const char* what) {
  if (index.dtype() == DType::Int32 || index.dtype() == DType::Int64) return Status::success();
  return invalid(context, std::string(what) + " must be int32 or int64, got " + dtype_name(index.dtype()));
}

template <class T>
Status widen_indices(const KernelContext& context, const T* data, int64_t size, int64_t dimension,
                     std::vector<int64_t>& indices) {
  for (size_t i = 0; i < indices.size(); ++i) {
    const int64_t value = static_cast<int64_t>(data[i]);
    if (value < 0 || value >= size) {
      return invalid(context, "index " + std::to_string(value) + " (element " + std::to_string(i) +
                                  " of the indices) is out of range for dimension " + std::to_string(dimension) +
                                  " of size " + std::to_string(size));
    }
    indices[i] = value;
  }
  return Status::success();
}

// `index`'s values in row-major order as int64, each checked against [0, size) of
// `dimension` of the data.
Status read_indices(const KernelContext& context, const Tensor& index, int64_t size, int64_t dimension,
                    std::vector<int64_t>& indices) {
  const Tensor values = index.contiguous();
  indices.resize(static_cast<size_t>(values.numel()));
  if (values.dtype() == DType::Int32) {
    return widen_indices(context, values.data_as<int32_t>(), size, dimension, indices);
  }
  return widen_indices(context, values.data_as<int64_t>(), size, dimension, indices);
}

// Where rows are read from: block b, row r starts at data + b * block_stride + r * row_stride
// (strides in bytes) and is row_bytes long and contiguous.
struct RowSource {
  const char* data;
  int64_t block_stride;
  int64_t row_stride;
  int64_t row_bytes;
};

// out [blocks, indices, row] = source[block, indices[j]]: one memcpy per row, rows split
// across the thread pool.
void copy_rows(const RowSource& source, int64_t blocks, const std::vector<int64_t>& indices, char* out) {
  const int64_t count = static_cast<int64_t>(indices.size());
  if (blocks == 0 || count == 0 || source.row_bytes == 0) return;
  const int64_t grain = std::max<int64_t>(1, kParallelGrain * 4 / source.row_bytes);
  parallel_for(0, blocks * count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t block = row / count, picked = indices[static_cast<size_t>(row % count)];
      std::memcpy(out + row * source.row_bytes, source.data + block * source.block_stride + picked * source.row_stride,
                  static_cast<size_t>(source.row_bytes));
    }
  });
}

// Inputs weight [V, D] (any dtype), indices (int32/int64) [...]: out [..., D], row i of the
// output is row indices[i] of weight.
Status embedding_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 2));
  const Tensor& weight = *context.inputs[0];
  const Tensor& index = *context.inputs[1];
  if (weight.dim() != 2) {
    return invalid(context, "weight must be [V, D], got " + shape_text(weight.shape()));
  }
  EDGERT_RETURN_IF_ERROR(check_index_dtype(context, index, "indices"));
  std::vector<int64_t> indices;
  EDGERT_RETURN_IF_ERROR(read_indices(context, index, weight.shape()[0], 0, indices));
  std::vector<int64_t> shape = index.shape();
  shape.push_back(weight.shape()[1]);
  Tensor out = Tensor::uninitialized(weight.dtype(), std::move(shape));
  // Rows of a table whose columns are not adjacent are gathered from a contiguous copy.
  const bool rows_contiguous = weight.shape()[1] <= 1 || weight.strides()[1] == 1;
  const Tensor table = rows_contiguous ? weight : weight.contiguous();
  const int64_t element = static_cast<int64_t>(dtype_size(weight.dtype()));
  const RowSource source{static_cast<const char*>(table.data()), 0, table.strides()[0] * element,
                         weight.shape()[1] * element};
  copy_rows(source, 1, indices, static_cast<char*>(out.data()));
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// Inputs x, index (1-D int32/int64); attribute axis: out is x with dimension axis replaced
// by x's entries index[0], index[1], ... along it.
Status index_select_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 2));
  const Tensor& input = *context.inputs[0];
  const Tensor& index = *context.inputs[1];
  int64_t axis = 0;
  EDGERT_RETURN_IF_ERROR(required_axis(context, input.dim(), axis));
  EDGERT_RETURN_IF_ERROR(check_index_dtype(context, index, "index"));
  if (index.dim() != 1) return invalid(context, "index must be 1-D, got " + shape_text(index.shape()));
  const size_t a = static_cast<size_t>(axis);
  std::vector<int64_t> indices;
  EDGERT_RETURN_IF_ERROR(read_indices(context, index, input.shape()[a], axis, indices));
  std::vector<int64_t> shape = input.shape();
  shape[a] = index.shape()[0];
  Tensor out = Tensor::uninitialized(input.dtype(), shape);
  const Tensor x = input.contiguous();  // [blocks, size, inner] with contiguous rows of inner
  const int64_t element = static_cast<int64_t>(dtype_size(input.dtype()));
  const int64_t inner = product(input.shape(), a + 1, input.shape().size());
  const RowSource source{static_cast<const char*>(x.data()), input.shape()[a] * inner * element, inner * element,
                         inner * element};
  copy_rows(source, product(input.shape(), 0, a), indices, static_cast<char*>(out.data()));
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

// out[p] = x[p with its axis coordinate replaced by indices[p]], for the rows [begin, end) of
// out (a row runs along the last dimension). x is read through its own strides.
template <class T>
void gather_rows(const Tensor& x, const std::vector<int64_t>& indices, size_t axis, Tensor& out, int64_t begin,
                 int64_t end) {
  const std::vector<int64_t>& shape = out.shape();
  const std::vector<int64_t>& strides = x.strides();
  const size_t last = shape.size() - 1;
  const int64_t length = shape[last];
  const int64_t along_last = axis == last ? 0 : strides[last];
  const T* source = static_cast<const T*>(x.data());
  T* target = static_cast<T*>(out.data());
  for (int64_t row = begin; row < end; ++row) {
    int64_t base = 0, rest = row;
    for (size_t d = last; d-- > 0;) {
      if (d != axis) base += (rest % shape[d]) * strides[d];
      rest /= shape[d];
    }
    for (int64_t k = 0; k < length; ++k) {
      const int64_t n = row * length + k;
      target[n] = source[base + k * along_last + indices[static_cast<size_t>(n)] * strides[axis]];
    }
  }
}

// Element copies typed by size: every dtype is 1, 4 or 8 bytes.
void gather_elements(const Tensor& x, const std::vector<int64_t>& indices, size_t axis, Tensor& out) {
  if (out.numel() == 0) return;
  const int64_t length = out.shape().back();
  const int64_t rows = out.numel() / length;
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / length), [&](int64_t begin, int64_t end) {
    switch (dtype_size(x.dtype())) {
      case 1: return gather_rows<uint8_t>(x, indices, axis, out, begin, end);
      case 4: return gather_rows<uint32_t>(x, indices, axis, out, begin, end);
      default: return gather_rows<uint64_t>(x, indices, axis, out, begin, end);
    }
  });
}

// Inputs x, index (int32/int64, x's rank, no dimension larger than x's except along axis);
// attribute axis: torch.gather.
Status gather_kernel(KernelContext& context) {
  EDGERT_RETURN_IF_ERROR(check_arity(context, 2, 2));
  const Tensor& input = *context.inputs[0];
  const Tensor& index = *context.inputs[1];
  int64_t axis = 0;
  EDGERT_RETURN_IF_ERROR(required_axis(context, input.dim(), axis));
  EDGERT_RETURN_IF_ERROR(check_index_dtype(context, index, "index"));
  bool fits = index.dim() == input.dim();
  for (int64_t d = 0; fits && d < input.dim(); ++d) {
    fits = d == axis || index.shape()[static_cast<size_t>(d)] <= input.shape()[static_cast<size_t>(d)];
  }
  if (!fits) {
    return invalid(context, "index " + shape_text(index.shape()) + " must have the rank of x " +
                                shape_text(input.shape()) + " and no larger dimension except axis " +
                                std::to_string(axis));
  }
  const size_t a = static_cast<size_t>(axis);
  std::vector<int64_t> indices;
  EDGERT_RETURN_IF_ERROR(read_indices(context, index, input.shape()[a], axis, indices));
  Tensor out = Tensor::uninitialized(input.dtype(), index.shape());
  gather_elements(input, indices, a, out);
  (*context.outputs)[0] = std::move(out);
  return Status::success();
}

}  // namespace

EDGERT_REGISTER_OPERATOR("edgert::gather", gather_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::gather", {{"axis", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::index_select", index_select_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::index_select", {{"axis", AttributeKind::Int}});
EDGERT_REGISTER_OPERATOR("edgert::embedding", embedding_kernel);
EDGERT_OPERATOR_ATTRIBUTES("edgert::embedding");

}  // namespace edgert::kernels
