// Device memory for one delegated run: uploads the values a run reads (except those seeded
// from the program's prepared state: its constants, uploaded once), allocates the ones it
// writes, and copies back only the written values something outside the run reads. Work is
// queued on the program's own stream. Frees what it allocated on destruction, so an error
// part-way never leaks device memory; seeded tensors belong to the prepared state.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
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

// Bytes copied between host and device by this library, for tests and benchmarks.
inline std::atomic<unsigned long long> uploaded_bytes{0};
inline std::atomic<unsigned long long> downloaded_bytes{0};

struct DeviceTensor {
  float* data = nullptr;
  std::vector<int64_t> shape;
  bool produced = false;  // written by this run
  bool owned = true;      // false: seeded from the prepared state, not freed here

  long long numel() const {
    long long count = 1;
    for (int64_t size : shape) count *= size;
    return count;
  }
};

class DeviceValues {
 public:
  DeviceValues(std::vector<Tensor>& host, cudaStream_t stream) : host_(host), stream_(stream) {}
  DeviceValues(const DeviceValues&) = delete;
  DeviceValues& operator=(const DeviceValues&) = delete;
  ~DeviceValues() {
    for (auto& entry : tensors_) {
      if (entry.second.owned) cudaFree(entry.second.data);
    }
  }

  // Uses `tensor` (kept by the caller, e.g. a constant uploaded at prepare time) for value `id`.
  void seed(int32_t id, const DeviceTensor& tensor) {
    DeviceTensor& slot = tensors_[id];
    slot = tensor;
    slot.owned = false;
    slot.produced = false;
  }

  // Uploads `source` (contiguous float32) into a new device tensor on `stream`.
  static Status upload(const Tensor& source, cudaStream_t stream, DeviceTensor& slot) {
    const Tensor contiguous = source.contiguous();
    slot.shape = contiguous.shape();
    EDGERT_RETURN_IF_ERROR(allocate(slot));
    // From pageable memory the copy is staged before the call returns: `contiguous` may go.
    EDGERT_RETURN_IF_ERROR(check(cudaMemcpyAsync(slot.data, contiguous.data(), contiguous.nbytes(),
                                                 cudaMemcpyHostToDevice, stream), "upload"));
    uploaded_bytes += contiguous.nbytes();
    return Status::success();
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
    DeviceTensor& slot = tensors_[id];
    EDGERT_RETURN_IF_ERROR(upload(host_[id], stream_, slot));
    tensor = &slot;
    return Status::success();
  }

  // Allocates value `id` with `shape` as an output of this run.
  Status output(int32_t id, const std::vector<int64_t>& shape, DeviceTensor*& tensor) {
    DeviceTensor& slot = tensors_[id];
    if (slot.owned) cudaFree(slot.data);
    slot.data = nullptr;
    slot.owned = true;
    slot.shape = shape;
    slot.produced = true;
    EDGERT_RETURN_IF_ERROR(allocate(slot));
    tensor = &slot;
    return Status::success();
  }

  // Copies the produced values listed in `needed` (read outside the run) into new host
  // tensors, then waits for the stream; intermediates stay on the device.
  Status download(const std::vector<int32_t>& needed) {
    for (int32_t id : needed) {
      auto found = tensors_.find(id);
      if (found == tensors_.end() || !found->second.produced) continue;
      Tensor result = Tensor::uninitialized(DType::Float32, found->second.shape);
      EDGERT_RETURN_IF_ERROR(check(cudaMemcpyAsync(result.data(), found->second.data,
                                                   result.nbytes(), cudaMemcpyDeviceToHost,
                                                   stream_), "download"));
      downloaded_bytes += result.nbytes();
      host_[static_cast<size_t>(id)] = std::move(result);
    }
    return check(cudaStreamSynchronize(stream_), "synchronize");
  }

  cudaStream_t stream() const { return stream_; }

 private:
  static Status allocate(DeviceTensor& tensor) {
    const size_t bytes = static_cast<size_t>(tensor.numel()) * sizeof(float);
    return check(cudaMalloc(reinterpret_cast<void**>(&tensor.data), bytes ? bytes : 1), "cudaMalloc");
  }

  std::vector<Tensor>& host_;
  cudaStream_t stream_;
  std::unordered_map<int32_t, DeviceTensor> tensors_;
};

}  // namespace edgert::cuda
