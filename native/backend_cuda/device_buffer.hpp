// Device memory for one delegated run. The values a run reads from outside (the program's
// inputs to these nodes) go up through the program's page-locked staging buffer; constants are
// seeded from the prepared state (uploaded once); written values get device memory, reused
// from the program's cache of the previous run's buffers; only the written values something
// outside the run reads come back, again through page-locked staging. Work is queued on the
// program's own stream. Buffers return to the program's cache on destruction (or are freed
// when there is none), so an error part-way never leaks device memory.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
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
inline void broadcast_strides(const std::vector<int64_t>& shape, const std::vector<int64_t>& target,
                              long long* strides) {
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
  size_t capacity = 0;    // bytes allocated at data
  bool produced = false;  // written by this run
  bool owned = true;      // false: seeded from the prepared state, not freed here

  long long numel() const {
    long long count = 1;
    for (int64_t size : shape) count *= size;
    return count;
  }
  size_t nbytes() const { return static_cast<size_t>(numel()) * sizeof(float); }
};

// Page-locked host memory a program's copies go through. A copy from pageable memory is
// staged by the driver and returns only once staged; one from page-locked memory is a
// direct, truly asynchronous transfer. Grows to the largest run seen; freed with the program.
class PinnedStaging {
 public:
  PinnedStaging() = default;
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  ~PinnedStaging() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }

  // At least `bytes` of staging. Growing waits for `stream` first: copies from the old
  // buffer may still be in flight.
  Status reserve(size_t bytes, cudaStream_t stream) {
    if (bytes <= capacity_) return Status::success();
    EDGERT_RETURN_IF_ERROR(check(cudaStreamSynchronize(stream), "synchronize"));
    const size_t grown = std::max(bytes, capacity_ + capacity_ / 2);
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    capacity_ = 0;
    EDGERT_RETURN_IF_ERROR(
        check(cudaMallocHost(reinterpret_cast<void**>(&data_), grown), "cudaMallocHost (page-locked staging)"));
    capacity_ = grown;
    return Status::success();
  }

  unsigned char* data() const { return data_; }

 private:
  unsigned char* data_ = nullptr;
  size_t capacity_ = 0;
};

// Copies are placed at this alignment inside the staging buffer.
constexpr size_t kStagingAlignment = 256;
inline size_t staged_size(size_t bytes) {
  return (bytes + kStagingAlignment - 1) / kStagingAlignment * kStagingAlignment;
}

// What a prepared program keeps between runs: its stream, its staging buffers and the
// device buffers of its last run (by value id), reused when a value needs no more bytes.
struct RunResources {
  cudaStream_t stream = nullptr;
  PinnedStaging upload;
  PinnedStaging download;
  std::unordered_map<int32_t, DeviceTensor> cache;

  RunResources() = default;
  RunResources(const RunResources&) = delete;
  RunResources& operator=(const RunResources&) = delete;
  ~RunResources() {
    for (auto& entry : cache) cudaFree(entry.second.data);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }
};

class DeviceValues {
 public:
  DeviceValues(std::vector<Tensor>& host, RunResources& resources) : host_(host), resources_(resources) {}
  DeviceValues(const DeviceValues&) = delete;
  DeviceValues& operator=(const DeviceValues&) = delete;
  ~DeviceValues() {
    for (auto& entry : tensors_) {
      if (!entry.second.owned) continue;
      DeviceTensor& cached = resources_.cache[entry.first];
      if (cached.data != nullptr && cached.data != entry.second.data) cudaFree(cached.data);
      cached = entry.second;  // kept for the next run of the program
    }
  }

  // Uses `tensor` (kept by the caller, e.g. a constant uploaded at prepare time) for value `id`.
  void seed(int32_t id, const DeviceTensor& tensor) {
    DeviceTensor& slot = tensors_[id];
    slot = tensor;
    slot.owned = false;
    slot.produced = false;
  }

  // Uploads `source` (contiguous float32) from pageable memory into a new device tensor and
  // waits for nothing: used once per constant at prepare time.
  static Status upload(const Tensor& source, cudaStream_t stream, DeviceTensor& slot) {
    const Tensor contiguous = source.contiguous();
    slot.shape = contiguous.shape();
    EDGERT_RETURN_IF_ERROR(allocate(slot));
    // From pageable memory the copy is staged before the call returns: `contiguous` may go.
    EDGERT_RETURN_IF_ERROR(check(
        cudaMemcpyAsync(slot.data, contiguous.data(), contiguous.nbytes(), cudaMemcpyHostToDevice, stream), "upload"));
    uploaded_bytes += contiguous.nbytes();
    return Status::success();
  }

  // Uploads the host values `ids` (read by this run, written elsewhere) through the
  // page-locked staging buffer: one host copy into staging, one asynchronous copy each.
  Status upload_inputs(const std::vector<int32_t>& ids) {
    std::vector<Tensor> sources;
    size_t total = 0;
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= host_.size() || !host_[id].defined()) {
        return Status(Code::InvalidArgument, "cuda backend: value " + std::to_string(id) + " has no data");
      }
      if (host_[id].dtype() != DType::Float32) {
        return Status(Code::InvalidArgument, "cuda backend: value " + std::to_string(id) + " is not float32");
      }
      sources.push_back(host_[id].contiguous());
      total += staged_size(sources.back().nbytes());
    }
    EDGERT_RETURN_IF_ERROR(resources_.upload.reserve(total, stream()));
    size_t offset = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      DeviceTensor* slot = nullptr;
      EDGERT_RETURN_IF_ERROR(claim(ids[i], sources[i].shape(), false, slot));
      unsigned char* staged = resources_.upload.data() + offset;
      if (sources[i].nbytes() != 0) std::memcpy(staged, sources[i].data(), sources[i].nbytes());
      EDGERT_RETURN_IF_ERROR(
          check(cudaMemcpyAsync(slot->data, staged, sources[i].nbytes(), cudaMemcpyHostToDevice, stream()), "upload"));
      uploaded_bytes += sources[i].nbytes();
      offset += staged_size(sources[i].nbytes());
    }
    return Status::success();
  }

  // The device copy of value `id`: a seeded constant, an uploaded input or a value this run
  // wrote earlier.
  Status input(int32_t id, const DeviceTensor*& tensor) {
    auto found = tensors_.find(id);
    if (found == tensors_.end()) {
      return Status(Code::Internal, "cuda backend: value " + std::to_string(id) +
                                        " was neither uploaded nor written before it is read");
    }
    tensor = &found->second;
    return Status::success();
  }

  // Device memory for value `id` with `shape`, written by this run.
  Status output(int32_t id, const std::vector<int64_t>& shape, DeviceTensor*& tensor) {
    return claim(id, shape, true, tensor);
  }

  // Copies the produced values listed in `needed` (read outside the run) back through the
  // page-locked staging buffer into new host tensors; intermediates stay on the device.
  Status download(const std::vector<int32_t>& needed) {
    std::vector<const DeviceTensor*> produced;
    size_t total = 0;
    for (int32_t id : needed) {
      auto found = tensors_.find(id);
      const bool written = found != tensors_.end() && found->second.produced;
      produced.push_back(written ? &found->second : nullptr);
      if (written) total += staged_size(found->second.nbytes());
    }
    EDGERT_RETURN_IF_ERROR(resources_.download.reserve(total, stream()));
    size_t offset = 0;
    for (const DeviceTensor* tensor : produced) {
      if (tensor == nullptr) continue;
      EDGERT_RETURN_IF_ERROR(check(cudaMemcpyAsync(resources_.download.data() + offset, tensor->data, tensor->nbytes(),
                                                   cudaMemcpyDeviceToHost, stream()),
                                   "download"));
      downloaded_bytes += tensor->nbytes();
      offset += staged_size(tensor->nbytes());
    }
    EDGERT_RETURN_IF_ERROR(check(cudaStreamSynchronize(stream()), "synchronize"));
    offset = 0;
    for (size_t i = 0; i < needed.size(); ++i) {
      if (produced[i] == nullptr) continue;
      Tensor result = Tensor::uninitialized(DType::Float32, produced[i]->shape);
      if (result.nbytes() != 0) {
        std::memcpy(result.data(), resources_.download.data() + offset, result.nbytes());
      }
      offset += staged_size(result.nbytes());
      host_[static_cast<size_t>(needed[i])] = std::move(result);
    }
    return Status::success();
  }

  cudaStream_t stream() const { return resources_.stream; }

 private:
  static Status allocate(DeviceTensor& tensor) {
    const size_t bytes = tensor.nbytes();
    tensor.capacity = bytes ? bytes : 1;
    return check(cudaMalloc(reinterpret_cast<void**>(&tensor.data), tensor.capacity), "cudaMalloc");
  }

  // The slot of value `id` with `shape`: the program's buffer from its last run when it is
  // large enough, new device memory otherwise.
  Status claim(int32_t id, const std::vector<int64_t>& shape, bool produced, DeviceTensor*& tensor) {
    DeviceTensor& slot = tensors_[id];
    if (slot.owned && slot.data == nullptr) {
      auto cached = resources_.cache.find(id);
      if (cached != resources_.cache.end()) {
        slot = cached->second;
        resources_.cache.erase(cached);
      }
    }
    slot.owned = true;
    slot.shape = shape;
    slot.produced = produced;
    if (slot.data == nullptr || slot.capacity < slot.nbytes()) {
      if (slot.data != nullptr) cudaFree(slot.data);
      slot.data = nullptr;
      EDGERT_RETURN_IF_ERROR(allocate(slot));
    }
    tensor = &slot;
    return Status::success();
  }

  std::vector<Tensor>& host_;
  RunResources& resources_;
  std::unordered_map<int32_t, DeviceTensor> tensors_;
};

}  // namespace edgert::cuda
