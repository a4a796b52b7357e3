// Device memory for one delegated run: uploads the values a run reads, allocates the ones it
// writes and copies the written values back to host tensors at the end. Frees everything on
// destruction, so an error part-way never leaks device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "edgert/status.hpp"
#include "edgert/tensor.hpp"

namespace edgert::cuda {

inline Status check(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return Status::success();
  const Code code = error == cudaErrorMemoryAllocation ? Code::OutOfMemory : Code::Internal;
  return Status(code, std::string("cuda backend: ") + what + ": " + cudaGetErrorString(error));
}

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// numpy broadcasting of two shapes; false when they are incompatible.
inline bool broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                             std::vector<int64_t>& shape) {
  const size_t rank = a.size() > b.size() ? a.size() : b.size();
  shape.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    shape[i] = x == 1 ? y : x;
  }
  return true;
}

// Contiguous element strides of `shape` seen through the broadcast `target` (0 when broadcast).
inline void broadcast_strides(const std::vector<int64_t>& shape,
                              const std::vector<int64_t>& target, long long* strides) {
  const size_t offset = target.size() - shape.size();
  long long stride = 1;
  for (size_t d = target.size(); d-- > 0;) {
    strides[d] = 0;
    if (d < offset) continue;
    const int64_t size = shape[d - offset];
    if (size != 1) strides[d] = stride;
    stride *= size;
  }
}

struct DeviceTensor {
  float* data = nullptr;
  std::vector<int64_t> shape;
  bool produced = false;  // written by this run: copied back at the end

  long long numel() const {
    long long count = 1;
    for (int64_t size : shape) count *= size;
    return count;
  }
};

class DeviceValues {
 public:
  explicit DeviceValues(std::vector<Tensor>& host) : host_(host) {}
  DeviceValues(const DeviceValues&) = delete;
  DeviceValues& operator=(const DeviceValues&) = delete;
  ~DeviceValues() {
    for (auto& entry : tensors_) cudaFree(entry.second.data);
  }

  // The device copy of value `id`, uploaded from the host tensor on first use.
  Status input(int32_t id, const DeviceTensor*& tensor) {
    auto found = tensors_.find(id);
    if (found != tensors_.end()) {
      tensor = &found->second;
      return Status::success();
    }
    if (id < 0 || static_cast<size_t>(id) >= host_.size() || !host_[id].defined()) {
      return Status(Code::InvalidArgument, "cuda backend: value " + std::to_string(id) +
                                               " has no data");
    }
    if (host_[id].dtype() != DType::Float32) {
      return Status(Code::InvalidArgument, "cuda backend: value " + std::to_string(id) +
                                               " is not float32");
    }
    const Tensor contiguous = host_[id].contiguous();
    DeviceTensor& slot = tensors_[id];
    slot.shape = contiguous.shape();
    EDGERT_RETURN_IF_ERROR(allocate(slot));
    EDGERT_RETURN_IF_ERROR(check(cudaMemcpy(slot.data, contiguous.data(), contiguous.nbytes(),
                                            cudaMemcpyHostToDevice), "upload"));
    tensor = &slot;
    return Status::success();
  }

  // Allocates value `id` with `shape` as an output of this run.
  Status output(int32_t id, const std::vector<int64_t>& shape, DeviceTensor*& tensor) {
    DeviceTensor& slot = tensors_[id];
    cudaFree(slot.data);
    slot.data = nullptr;
    slot.shape = shape;
    slot.produced = true;
    EDGERT_RETURN_IF_ERROR(allocate(slot));
    tensor = &slot;
    return Status::success();
  }

  // Copies every value this run produced into a new host tensor.
  Status download_produced() {
    for (auto& entry : tensors_) {
      if (!entry.second.produced) continue;
      Tensor result(DType::Float32, entry.second.shape);
      EDGERT_RETURN_IF_ERROR(check(cudaMemcpy(result.data(), entry.second.data, result.nbytes(),
                                              cudaMemcpyDeviceToHost), "download"));
      host_[static_cast<size_t>(entry.first)] = std::move(result);
    }
    return Status::success();
  }

 private:
  static Status allocate(DeviceTensor& tensor) {
    const size_t bytes = static_cast<size_t>(tensor.numel()) * sizeof(float);
    return check(cudaMalloc(reinterpret_cast<void**>(&tensor.data), bytes ? bytes : 1), "cudaMalloc");
  }

  std::vector<Tensor>& host_;
  std::unordered_map<int32_t, DeviceTensor> tensors_;
};

}  // namespace edgert::cuda
