// edgert tensors: a dtype, a shape, strides in elements and shared storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgert/export.h"

namespace edgert {

// Values are part of the program format (docs/program-format.md): never renumber.
// Bool: one byte per element, 0 (false) or 1 (true); kernels write only 0 and 1.
enum class DType : uint8_t { Float32 = 0, Int8 = 1, UInt8 = 2, Int32 = 3, Int64 = 4, Bool = 5 };

EDGERT_API size_t dtype_size(DType dtype);
EDGERT_API const char* dtype_name(DType dtype);
EDGERT_API bool dtype_is_valid(uint32_t raw);

// The one checked size computation: a tensor holds at most 2^48 bytes. Every kernel, the
// Tensor constructor and the loader size tensors through this; overflow is never a wrap.
constexpr int64_t kMaxTensorBytes = int64_t{1} << 48;
// The element count of `shape` (negative dimensions count as 0) when it and its size in
// bytes (`element_size` each) stay within kMaxTensorBytes; false otherwise.
EDGERT_API bool checked_element_count(const std::vector<int64_t>& shape, size_t element_size, int64_t* count);

class EDGERT_API Tensor {
 public:
  Tensor() = default;
  // A contiguous, zero-filled tensor that owns its storage. Throws std::length_error for a
  // shape over kMaxTensorBytes and std::bad_alloc when the memory cannot be had.
  Tensor(DType dtype, std::vector<int64_t> shape);
  // The same, with unspecified contents: for a kernel that writes every element (saves a pass
  // over the memory). Same exceptions.
  static Tensor uninitialized(DType dtype, std::vector<int64_t> shape);
  // A view over memory owned by `keep_alive` (may be null for memory the caller keeps alive).
  static Tensor view(DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides, void* data,
                     std::shared_ptr<void> keep_alive);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  bool is_contiguous() const;
  bool defined() const { return data_ != nullptr || numel() == 0; }

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T>
  T* data_as() {
    return static_cast<T*>(data_);
  }
  template <class T>
  const T* data_as() const {
    return static_cast<const T*>(data_);
  }

  // A contiguous copy (or this tensor itself when it already is contiguous).
  Tensor contiguous() const;
  // Same storage, new shape; requires a contiguous tensor and an equal element count.
  Tensor reshaped(std::vector<int64_t> shape) const;

  static std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape);

 private:
  DType dtype_ = DType::Float32;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  std::shared_ptr<void> storage_;
  void* data_ = nullptr;
};

}  // namespace edgert
