// A stand-in for libcudart that runs the CUDA delegate's kernels on the host, so the delegate's
// host logic (prepare once, staging, buffer reuse, streams, error handling) is tested where no
// GPU is present. It is strict where a GPU is strict:
//   - device memory is only what cudaMalloc returned: a copy or a kernel argument outside it is
//     cudaErrorIllegalAddress (on a GPU, a host pointer in a kernel faults);
//   - page-locked memory is only what cudaMallocHost returned, and copies count which they used;
//   - streams are only what cudaStreamCreateWithFlags returned; the legacy default stream is
//     counted when used;
//   - the fatbinary handed to cudaLibraryLoadData must start with the fatbin magic;
//   - after HOST_CUDART_FAULT_AT_LAUNCH=N, the N-th launch poisons the context like an illegal
//     address on a GPU: every later call returns that error.
// Built per CUDA major by tests/cuda/test_host_runtime.py with the toolkit's own headers and a
// version script naming libcudart.so.<major>, so the delegate links to it unchanged.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace {

struct Broadcast {  // mirrors EdgertBroadcast in native/backend_cuda/kernels.cu
  long long count;
  int rank;
  long long shape[6];
  long long a_strides[6];
  long long b_strides[6];
};

enum KernelId { kLinear = 1, kAdd, kRelu, kSoftmax };

struct Stats {
  unsigned long long h2d_bytes, d2h_bytes, pinned_copies, pageable_copies, device_allocations,
      device_frees, pinned_allocations, launches, default_stream_uses, live_device_bytes,
      live_streams;
};

std::mutex lock;
std::map<uintptr_t, size_t> device;  // start -> bytes
std::map<uintptr_t, size_t> pinned;
std::set<cudaStream_t> streams;
Stats stats{};
cudaError_t sticky = cudaSuccess;
thread_local cudaError_t last_error = cudaSuccess;
int library_token = 0;

cudaError_t fail(cudaError_t error) {
  last_error = error;
  return error;
}

bool inside(const std::map<uintptr_t, size_t>& blocks, const void* pointer, size_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(pointer);
  auto next = blocks.upper_bound(start);
  if (next == blocks.begin()) return false;
  --next;
  return start >= next->first && start + bytes <= next->first + next->second;
}

bool valid_stream(cudaStream_t stream) {
  if (stream == nullptr) {
    ++stats.default_stream_uses;
    return true;
  }
  return streams.count(stream) != 0;
}

long long fault_at_launch() {
  const char* text = std::getenv("HOST_CUDART_FAULT_AT_LAUNCH");
  return text ? std::atoll(text) : 0;
}

// Kernels, one call per launch, with the arguments the delegate passes (kernels.cu's order).
bool run_kernel(KernelId kernel, void** args) {
  switch (kernel) {
    case kLinear: {
      const float* x = *static_cast<const float**>(args[0]);
      const float* w = *static_cast<const float**>(args[1]);
      const float* bias = *static_cast<const float**>(args[2]);
      float* y = *static_cast<float**>(args[3]);
      const long long rows = *static_cast<long long*>(args[4]);
      const long long n = *static_cast<long long*>(args[5]);
      const long long k = *static_cast<long long*>(args[6]);
      const int relu = *static_cast<int*>(args[7]);
      const size_t f = sizeof(float);
      if (!inside(device, x, rows * k * f) || !inside(device, w, n * k * f) ||
          (bias && !inside(device, bias, n * f)) || !inside(device, y, rows * n * f)) {
        return false;
      }
      for (long long r = 0; r < rows; ++r) {
        for (long long c = 0; c < n; ++c) {
          float sum = 0.0f;
          for (long long i = 0; i < k; ++i) sum += x[r * k + i] * w[c * k + i];
          if (bias) sum += bias[c];
          y[r * n + c] = (relu && sum < 0.0f) ? 0.0f : sum;
        }
      }
      return true;
    }
    case kAdd: {
      const float* a = *static_cast<const float**>(args[0]);
      const float* b = *static_cast<const float**>(args[1]);
      float* y = *static_cast<float**>(args[2]);
      const Broadcast plan = *static_cast<Broadcast*>(args[3]);
      long long a_size = 1, b_size = 1;
      for (int d = 0; d < plan.rank; ++d) {
        a_size += (plan.shape[d] - 1) * plan.a_strides[d];
        b_size += (plan.shape[d] - 1) * plan.b_strides[d];
      }
      if (!inside(device, a, a_size * sizeof(float)) || !inside(device, b, b_size * sizeof(float)) ||
          !inside(device, y, plan.count * sizeof(float))) {
        return false;
      }
      for (long long index = 0; index < plan.count; ++index) {
        long long rest = index, ao = 0, bo = 0;
        for (int d = plan.rank - 1; d >= 0; --d) {
          const long long i = rest % plan.shape[d];
          rest /= plan.shape[d];
          ao += i * plan.a_strides[d];
          bo += i * plan.b_strides[d];
        }
        y[index] = a[ao] + b[bo];
      }
      return true;
    }
    case kRelu: {
      const float* x = *static_cast<const float**>(args[0]);
      float* y = *static_cast<float**>(args[1]);
      const long long count = *static_cast<long long*>(args[2]);
      if (!inside(device, x, count * sizeof(float)) || !inside(device, y, count * sizeof(float))) {
        return false;
      }
      for (long long i = 0; i < count; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
      return true;
    }
    case kSoftmax: {
      const float* x = *static_cast<const float**>(args[0]);
      float* y = *static_cast<float**>(args[1]);
      const long long outer = *static_cast<long long*>(args[2]);
      const long long length = *static_cast<long long*>(args[3]);
      const long long inner = *static_cast<long long*>(args[4]);
      const size_t bytes = outer * length * inner * sizeof(float);
      if (!inside(device, x, bytes) || !inside(device, y, bytes)) return false;
      for (long long line = 0; line < outer * inner; ++line) {
        const long long base = (line / inner) * length * inner + line % inner;
        float maximum = x[base];
        for (long long i = 1; i < length; ++i) maximum = std::fmax(maximum, x[base + i * inner]);
        float total = 0.0f;
        for (long long i = 0; i < length; ++i) {
          const float e = std::exp(x[base + i * inner] - maximum);
          y[base + i * inner] = e;
          total += e;
        }
        for (long long i = 0; i < length; ++i) y[base + i * inner] /= total;
      }
      return true;
    }
  }
  return false;
}

}  // namespace

#define HOST_CUDART_STICKY()                    \
  std::lock_guard<std::mutex> guard(lock);      \
  if (sticky != cudaSuccess) return fail(sticky)

extern "C" {

cudaError_t cudaGetDeviceCount(int* count) {
  const char* text = std::getenv("HOST_CUDART_DEVICES");
  *count = text ? std::atoi(text) : 1;
  return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* properties, int device_index) {
  if (device_index != 0) return fail(cudaErrorInvalidDevice);
  std::memset(properties, 0, sizeof(*properties));
  std::strcpy(properties->name, "host stand-in");
  properties->major = 9;
  properties->minor = 0;
  return cudaSuccess;
}

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorSymbolNotFound: return "named symbol not found";
    case cudaErrorInvalidKernelImage: return "device kernel image is invalid";
    default: return "unknown error";
  }
}

cudaError_t cudaGetLastError(void) {
  const cudaError_t error = sticky != cudaSuccess ? sticky : last_error;
  last_error = cudaSuccess;
  return error;
}

cudaError_t cudaLibraryLoadData(cudaLibrary_t* library, const void* code, cudaJitOption*, void**,
                                unsigned int, cudaLibraryOption*, void**, unsigned int) {
  HOST_CUDART_STICKY();
  uint32_t magic = 0;
  std::memcpy(&magic, code, sizeof(magic));
  if (magic != 0xBA55ED50u) return fail(cudaErrorInvalidKernelImage);
  *library = reinterpret_cast<cudaLibrary_t>(&library_token);
  return cudaSuccess;
}

cudaError_t cudaLibraryGetKernel(cudaKernel_t* kernel, cudaLibrary_t library, const char* name) {
  HOST_CUDART_STICKY();
  if (library != reinterpret_cast<cudaLibrary_t>(&library_token)) {
    return fail(cudaErrorInvalidResourceHandle);
  }
  static const std::map<std::string, KernelId> names = {
      {"edgert_linear", kLinear}, {"edgert_add", kAdd}, {"edgert_relu", kRelu},
      {"edgert_softmax", kSoftmax}};
  auto found = names.find(name);
  if (found == names.end()) return fail(cudaErrorSymbolNotFound);
  *kernel = reinterpret_cast<cudaKernel_t>(static_cast<uintptr_t>(found->second));
  return cudaSuccess;
}

cudaError_t cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args, size_t,
                             cudaStream_t stream) {
  HOST_CUDART_STICKY();
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  const uintptr_t id = reinterpret_cast<uintptr_t>(function);
  if (id < kLinear || id > kSoftmax || grid.x == 0 || block.x == 0) return fail(cudaErrorInvalidValue);
  ++stats.launches;
  if (static_cast<long long>(stats.launches) == fault_at_launch() ||
      !run_kernel(static_cast<KernelId>(id), args)) {
    sticky = cudaErrorIllegalAddress;  // reported by later calls, as a GPU fault is
  }
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  HOST_CUDART_STICKY();
  *pointer = std::malloc(bytes ? bytes : 1);
  if (*pointer == nullptr) return fail(cudaErrorMemoryAllocation);
  device[reinterpret_cast<uintptr_t>(*pointer)] = bytes;
  ++stats.device_allocations;
  stats.live_device_bytes += bytes;
  return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
  std::lock_guard<std::mutex> guard(lock);
  if (pointer == nullptr) return cudaSuccess;
  auto found = device.find(reinterpret_cast<uintptr_t>(pointer));
  if (found == device.end()) return fail(cudaErrorInvalidValue);
  stats.live_device_bytes -= found->second;
  ++stats.device_frees;
  device.erase(found);
  std::free(pointer);
  return sticky != cudaSuccess ? fail(sticky) : cudaSuccess;
}

cudaError_t cudaMallocHost(void** pointer, size_t bytes) {
  HOST_CUDART_STICKY();
  *pointer = std::malloc(bytes ? bytes : 1);
  if (*pointer == nullptr) return fail(cudaErrorMemoryAllocation);
  pinned[reinterpret_cast<uintptr_t>(*pointer)] = bytes;
  ++stats.pinned_allocations;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* pointer) {
  std::lock_guard<std::mutex> guard(lock);
  auto found = pinned.find(reinterpret_cast<uintptr_t>(pointer));
  if (found == pinned.end()) return fail(cudaErrorInvalidValue);
  pinned.erase(found);
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void* destination, const void* source, size_t bytes,
                            cudaMemcpyKind kind, cudaStream_t stream) {
  HOST_CUDART_STICKY();
  if (!valid_stream(stream)) return fail(cudaErrorInvalidResourceHandle);
  const void* host = kind == cudaMemcpyHostToDevice ? source : destination;
  const void* on_device = kind == cudaMemcpyHostToDevice ? destination : source;
  if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost) {
    return fail(cudaErrorInvalidValue);
  }
  if (!inside(device, on_device, bytes) || inside(device, host, bytes)) {
    return fail(cudaErrorInvalidValue);
  }
  ++(inside(pinned, host, bytes) ? stats.pinned_copies : stats.pageable_copies);
  (kind == cudaMemcpyHostToDevice ? stats.h2d_bytes : stats.d2h_bytes) += bytes;
  std::memcpy(destination, source, bytes);
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) {
  HOST_CUDART_STICKY();
  *stream = reinterpret_cast<cudaStream_t>(new int(0));
  streams.insert(*stream);
  ++stats.live_streams;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::lock_guard<std::mutex> guard(lock);
  if (streams.erase(stream) == 0) return fail(cudaErrorInvalidResourceHandle);
  delete reinterpret_cast<int*>(stream);
  --stats.live_streams;
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream) {
  HOST_CUDART_STICKY();
  return valid_stream(stream) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  HOST_CUDART_STICKY();
  return valid_stream(stream) ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}

// What the stand-in saw, for the tests (ctypes).
void host_cudart_stats(Stats* out) {
  std::lock_guard<std::mutex> guard(lock);
  *out = stats;
}

}  // extern "C"
