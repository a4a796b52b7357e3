// The "cuda" delegate: runs consecutive edgert::linear / add / relu / softmax nodes (f32) on
// the GPU with the kernels of kernels.cu, fusing linear followed by relu.
//
// Per program (prepare, once): the fusion plan, the program's constants (weights, biases)
// uploaded to the device, the lists of values the run reads from and gives back to the rest of
// the program, and a stream of its own. Per run: the inputs go up through page-locked staging,
// intermediates stay on the device in buffers reused from the previous run, only the values
// read outside the delegated nodes come back (through staging again). Programs run
// concurrently on their own streams.
//
// Loading this library never touches the GPU: libcudart finds the driver lazily, and the
// first call to available() (not a static initializer) probes for a device and loads the
// embedded fatbinary with cudaLibraryLoadData. Without a driver or GPU available() returns
// Unavailable with the reason, so the default backend list skips this delegate and an explicit
// set_backends({"cuda"}) fails with that message.
#include <cuda_runtime_api.h>

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "device_buffer.hpp"
#include "edgert/export.h"
#include "edgert/registry.hpp"

extern "C" const unsigned char edgert_cuda_fatbin_begin[];  // backend_cuda/fatbin.S

namespace edgert::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxRank = 6;
const char* const kClaims = EDGERT_CUDA_CLAIMS;  // "7.5 8.0 ..." from the variant

struct Broadcast {  // mirrors EdgertBroadcast in kernels.cu
  long long count;
  int rank;
  long long shape[kMaxRank];
  long long a_strides[kMaxRank];
  long long b_strides[kMaxRank];
};

enum Kernel { kLinear, kAdd, kRelu, kSoftmax, kKernelCount };
const char* const kKernelNames[kKernelCount] = {"edgert_linear", "edgert_add", "edgert_relu", "edgert_softmax"};

bool is_supported(const std::string& op) {
  return op == "edgert::linear" || op == "edgert::add" || op == "edgert::relu" || op == "edgert::softmax";
}

Status invalid(const Node& node, const std::string& message) {
  return Status(Code::InvalidArgument, "cuda backend: " + node.op + ": " + message);
}

unsigned int blocks_for(long long count) {
  return static_cast<unsigned int>((count + kThreads - 1) / kThreads);
}

// Whether `value` is read only by node `reader` and is not a graph output (safe to fuse away).
// Linear time: the loader counted every value's readers once (edgert::count_readers).
bool used_only_by(const Graph& graph, int32_t value, size_t reader) {
  size_t by_reader = 0;
  for (int32_t input : graph.nodes[reader].inputs) by_reader += input == value;
  return edgert::reader_count(graph, value) == by_reader;
}

class CudaBackend final : public Backend {
 public:
  const char* name() const override { return "cuda"; }
  int priority() const override { return 100; }  // ahead of "cpu" when a GPU is present

  Status available() const override {
    std::call_once(initialized_, [this] {
      status_ = initialize();
      pid_ = getpid();
    });
    if (status_.ok() && getpid() != pid_) {
      return Status(Code::Unavailable,
                    "the CUDA runtime cannot be used in a forked child of the "
                    "process that initialized it (start workers with spawn)");
    }
    if (const char* sticky = sticky_.load()) return Status(Code::Unavailable, sticky);
    return status_;
  }

  // After an error that poisons the CUDA context (an illegal address, a failed launch), no
  // later call can succeed: the delegate reports itself unavailable from then on.
  void note_failure(cudaStream_t stream) const {
    const cudaError_t error = cudaStreamQuery(stream);
    switch (error) {
      case cudaErrorIllegalAddress:
      case cudaErrorLaunchFailure:
      case cudaErrorHardwareStackError:
      case cudaErrorIllegalInstruction:
      case cudaErrorMisalignedAddress:
      case cudaErrorInvalidAddressSpace:
      case cudaErrorInvalidPc:
      case cudaErrorECCUncorrectable: {
        static std::string message;
        static std::once_flag once;
        std::call_once(once, [error] {
          message = std::string("the CUDA context hit an unrecoverable error (") + cudaGetErrorString(error) +
                    "); restart the process to use the GPU again";
        });
        sticky_.store(message.c_str());
        break;
      }
      default: break;
    }
  }

  size_t claim(const Graph& graph, size_t first) const override {
    if (!available().ok()) return 0;
    size_t count = 0;
    for (size_t i = first; i < graph.nodes.size() && claims_node(graph, graph.nodes[i]); ++i) {
      ++count;
    }
    return count;
  }

  Status prepare(const Graph& graph, size_t first, size_t count, std::unique_ptr<Prepared>& prepared) override;

  Status run(const Graph& graph, size_t first, size_t count, std::vector<Tensor>& values) override {
    std::unique_ptr<Prepared> prepared;
    EDGERT_RETURN_IF_ERROR(prepare(graph, first, count, prepared));
    return prepared->run(values);
  }

  // One step of a prepared run: node `node`, fused with the relu after it when `fused`.
  struct Step {
    size_t node;
    bool fused;
  };
  Status execute(const Graph& graph, const std::vector<Step>& steps, DeviceValues& device) const;

 private:
  Status initialize() const;
  bool claims_node(const Graph& graph, const Node& node) const;
  Status run_node(const Node& node, DeviceValues& device) const;
  Status run_linear(const Node& node, int32_t output, bool relu, DeviceValues& device) const;
  Status run_add(const Node& node, DeviceValues& device) const;
  Status run_softmax(const Node& node, DeviceValues& device) const;
  Status launch(Kernel kernel, long long threads, void** arguments, cudaStream_t stream) const;

  mutable std::once_flag initialized_;
  mutable Status status_;
  mutable pid_t pid_ = 0;
  mutable std::atomic<const char*> sticky_{nullptr};
  mutable cudaLibrary_t library_ = nullptr;
  mutable cudaKernel_t kernels_[kKernelCount] = {};
};

// A program's state on the device: its stream, staging and buffers, its constants, the plan.
class CudaPrepared final : public Prepared {
 public:
  CudaPrepared(const CudaBackend& backend, const Graph& graph) : backend_(backend), graph_(graph) {}
  ~CudaPrepared() override {
    if (resources_.stream != nullptr) cudaStreamSynchronize(resources_.stream);
    for (auto& entry : constants_) cudaFree(entry.second.data);
  }

  Status run(std::vector<Tensor>& values) override {
    EDGERT_RETURN_IF_ERROR(backend_.available());
    Status status;
    {
      DeviceValues device(values, resources_);
      for (const auto& [id, tensor] : constants_) device.seed(id, tensor);
      status = device.upload_inputs(inputs_);
      if (status.ok()) status = backend_.execute(graph_, steps_, device);
      if (status.ok()) status = check(cudaGetLastError(), "kernel launch");
      if (status.ok()) status = device.download(needed_);
    }
    if (!status.ok()) {
      backend_.note_failure(resources_.stream);
      // Nothing of a failed run may still be copying when the next run reuses the staging.
      cudaStreamSynchronize(resources_.stream);
    }
    return status;
  }

  const CudaBackend& backend_;
  const Graph& graph_;
  RunResources resources_;  // stream, page-locked staging, device buffers between runs
  std::vector<CudaBackend::Step> steps_;
  std::vector<int32_t> inputs_;                          // read here, written elsewhere
  std::vector<int32_t> needed_;                          // produced here, read elsewhere
  std::unordered_map<int32_t, DeviceTensor> constants_;  // uploaded once
};

Status CudaBackend::prepare(const Graph& graph, size_t first, size_t count, std::unique_ptr<Prepared>& prepared) {
  EDGERT_RETURN_IF_ERROR(available());
  auto state = std::make_unique<CudaPrepared>(*this, graph);
  cudaStream_t& stream = state->resources_.stream;
  EDGERT_RETURN_IF_ERROR(check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"));
  std::unordered_map<int32_t, size_t> reads_here;
  std::unordered_set<int32_t> written_here;
  for (size_t i = first; i < first + count; ++i) {
    written_here.insert(graph.nodes[i].outputs.begin(), graph.nodes[i].outputs.end());
  }
  for (size_t i = first; i < first + count; ++i) {
    const Node& node = graph.nodes[i];
    const bool fuse = node.op == "edgert::linear" && i + 1 < first + count && graph.nodes[i + 1].op == "edgert::relu" &&
                      graph.nodes[i + 1].inputs.at(0) == node.outputs.at(0) &&
                      used_only_by(graph, node.outputs[0], i + 1);
    state->steps_.push_back({i, fuse});
    for (size_t j = i; j <= i + (fuse ? 1 : 0); ++j) {
      for (int32_t input : graph.nodes[j].inputs) {
        if (input < 0) continue;
        const ValueInfo& info = graph.values.at(static_cast<size_t>(input));
        if (reads_here[input]++ != 0 || written_here.count(input) != 0) continue;
        if (!info.is_constant) {
          state->inputs_.push_back(input);  // uploaded by every run
          continue;
        }
        DeviceTensor& slot = state->constants_[input];
        EDGERT_RETURN_IF_ERROR(DeviceValues::upload(info.constant, stream, slot));
      }
    }
    if (fuse) ++i;
  }
  for (size_t i = first; i < first + count; ++i) {
    for (int32_t output : graph.nodes[i].outputs) {
      if (output >= 0 && edgert::reader_count(graph, output) > reads_here[output]) {
        state->needed_.push_back(output);  // a graph output, or read by a later node
      }
    }
  }
  EDGERT_RETURN_IF_ERROR(check(cudaStreamSynchronize(stream), "upload the constants"));
  prepared = std::move(state);
  return Status::success();
}

Status CudaBackend::execute(const Graph& graph, const std::vector<Step>& steps, DeviceValues& device) const {
  for (const Step& step : steps) {
    const Node& node = graph.nodes[step.node];
    if (step.fused) {
      EDGERT_RETURN_IF_ERROR(run_linear(node, graph.nodes[step.node + 1].outputs.at(0), true, device));
    } else {
      EDGERT_RETURN_IF_ERROR(run_node(node, device));
    }
  }
  return Status::success();
}

Status CudaBackend::initialize() const {
  int devices = 0;
  cudaError_t error = cudaGetDeviceCount(&devices);
  if (error != cudaSuccess || devices == 0) {
    return Status(Code::Unavailable, std::string("no usable CUDA GPU (") +
                                         (error != cudaSuccess ? cudaGetErrorString(error) : "no device found") +
                                         "); this build needs an NVIDIA driver and a GPU of compute capability " +
                                         kClaims + " or newer");
  }
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, 0) != cudaSuccess) properties.major = -1;
  error = cudaLibraryLoadData(&library_, edgert_cuda_fatbin_begin, nullptr, nullptr, 0, nullptr, nullptr, 0);
  for (int i = 0; error == cudaSuccess && i < kKernelCount; ++i) {
    error = cudaLibraryGetKernel(&kernels_[i], library_, kKernelNames[i]);
  }
  if (error != cudaSuccess) {
    return Status(Code::Unavailable, std::string("cannot load the CUDA kernels on GPU 0 (") + properties.name +
                                         ", compute capability " + std::to_string(properties.major) + "." +
                                         std::to_string(properties.minor) + "): " + cudaGetErrorString(error) +
                                         "; this build covers compute capabilities " + kClaims);
  }
  return Status::success();
}

bool CudaBackend::claims_node(const Graph& graph, const Node& node) const {
  if (!is_supported(node.op) || node.outputs.size() != 1) return false;
  // A linear with a fused activation (docs/operators.md) stays on the CPU kernels.
  if (node.attributes.get_string("activation", "none") != "none") return false;
  const size_t inputs = node.op == "edgert::linear" ? 3 : node.op == "edgert::add" ? 2 : 1;
  if (node.inputs.size() < (inputs == 3 ? 2 : inputs) || node.inputs.size() > inputs) return false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int32_t value = node.inputs[i];
    if (value < 0) {
      if (i < 2) return false;  // only the bias is optional
      continue;
    }
    const ValueInfo& info = graph.values.at(static_cast<size_t>(value));
    if (info.dtype != DType::Float32 || info.shape.size() > kMaxRank) return false;
  }
  return graph.values.at(static_cast<size_t>(node.outputs[0])).dtype == DType::Float32;
}

Status CudaBackend::launch(Kernel kernel, long long threads, void** arguments, cudaStream_t stream) const {
  if (threads == 0) return Status::success();
  const void* function = reinterpret_cast<const void*>(kernels_[kernel]);
  return check(cudaLaunchKernel(function, dim3(blocks_for(threads)), dim3(kThreads), arguments, 0, stream),
               kKernelNames[kernel]);
}

Status CudaBackend::run_node(const Node& node, DeviceValues& device) const {
  if (node.op == "edgert::linear") return run_linear(node, node.outputs.at(0), false, device);
  if (node.op == "edgert::add") return run_add(node, device);
  if (node.op == "edgert::softmax") return run_softmax(node, device);
  const DeviceTensor* input = nullptr;
  EDGERT_RETURN_IF_ERROR(device.input(node.inputs.at(0), input));
  DeviceTensor* output = nullptr;
  EDGERT_RETURN_IF_ERROR(device.output(node.outputs.at(0), input->shape, output));
  const float* x = input->data;
  float* y = output->data;
  long long count = input->numel();
  void* arguments[] = {&x, &y, &count};
  return launch(kRelu, count, arguments, device.stream());
}

Status CudaBackend::run_linear(const Node& node, int32_t output_value, bool relu, DeviceValues& device) const {
  const DeviceTensor *input = nullptr, *weight = nullptr, *bias = nullptr;
  EDGERT_RETURN_IF_ERROR(device.input(node.inputs.at(0), input));
  EDGERT_RETURN_IF_ERROR(device.input(node.inputs.at(1), weight));
  if (node.inputs.size() > 2 && node.inputs[2] >= 0) {
    EDGERT_RETURN_IF_ERROR(device.input(node.inputs[2], bias));
  }
  if (input->shape.empty() || weight->shape.size() != 2 || weight->shape[1] != input->shape.back()) {
    return invalid(node, "expected input [..., K] and weight [N, K], got " + shape_text(input->shape) + " and " +
                             shape_text(weight->shape));
  }
  long long n_out = weight->shape[0], k_in = weight->shape[1];
  if (bias != nullptr && (bias->shape.size() != 1 || bias->shape[0] != n_out)) {
    return invalid(node, "bias must be [" + std::to_string(n_out) + "], got " + shape_text(bias->shape));
  }
  std::vector<int64_t> shape = input->shape;
  shape.back() = n_out;
  DeviceTensor* output = nullptr;
  EDGERT_RETURN_IF_ERROR(device.output(output_value, shape, output));
  long long rows = 1;
  for (size_t d = 0; d + 1 < input->shape.size(); ++d) rows *= input->shape[d];
  const float *x = input->data, *w = weight->data, *b = bias ? bias->data : nullptr;
  float* y = output->data;
  int apply_relu = relu ? 1 : 0;
  void* arguments[] = {&x, &w, &b, &y, &rows, &n_out, &k_in, &apply_relu};
  return launch(kLinear, rows * n_out, arguments, device.stream());
}

Status CudaBackend::run_add(const Node& node, DeviceValues& device) const {
  const DeviceTensor *a = nullptr, *b = nullptr;
  EDGERT_RETURN_IF_ERROR(device.input(node.inputs.at(0), a));
  EDGERT_RETURN_IF_ERROR(device.input(node.inputs.at(1), b));
  Broadcast plan{};
  std::vector<int64_t> shape;
  if (!broadcast_shapes(a->shape, b->shape, shape) || shape.size() > kMaxRank) {
    return invalid(node,
                   "shapes " + shape_text(a->shape) + " and " + shape_text(b->shape) + " cannot be broadcast together");
  }
  plan.rank = static_cast<int>(shape.size());
  broadcast_strides(a->shape, shape, plan.a_strides);
  broadcast_strides(b->shape, shape, plan.b_strides);
  for (size_t d = 0; d < shape.size(); ++d) plan.shape[d] = shape[d];
  DeviceTensor* output = nullptr;
  EDGERT_RETURN_IF_ERROR(device.output(node.outputs.at(0), shape, output));
  plan.count = output->numel();
  const float *x = a->data, *z = b->data;
  float* y = output->data;
  void* arguments[] = {&x, &z, &y, &plan};
  return launch(kAdd, plan.count, arguments, device.stream());
}

Status CudaBackend::run_softmax(const Node& node, DeviceValues& device) const {
  const DeviceTensor* input = nullptr;
  EDGERT_RETURN_IF_ERROR(device.input(node.inputs.at(0), input));
  const int64_t rank = static_cast<int64_t>(input->shape.size());
  int64_t axis = node.attributes.get_int("axis", -1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return invalid(node, "axis is out of range for a tensor of rank " + std::to_string(rank));
  }
  long long outer = 1, inner = 1, length = input->shape[static_cast<size_t>(axis)];
  for (int64_t d = 0; d < axis; ++d) outer *= input->shape[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= input->shape[static_cast<size_t>(d)];
  DeviceTensor* output = nullptr;
  EDGERT_RETURN_IF_ERROR(device.output(node.outputs.at(0), input->shape, output));
  const float* x = input->data;
  float* y = output->data;
  void* arguments[] = {&x, &y, &outer, &length, &inner};
  return launch(kSoftmax, length == 0 ? 0 : outer * inner, arguments, device.stream());
}

CudaBackend cuda_backend;

}  // namespace
}  // namespace edgert::cuda

EDGERT_REGISTER_BACKEND("cuda", edgert::cuda::cuda_backend);

extern "C" EDGERT_COMPONENT_API const char* edgert_backend_cuda_component(void) {
  return "backend_cuda";
}

// Bytes copied host -> device (0) or device -> host (1) by this library since it was loaded:
// a second run of a prepared program uploads its inputs only, never its weights.
extern "C" EDGERT_COMPONENT_API unsigned long long edgert_backend_cuda_copied_bytes(int direction) {
  return direction == 0 ? edgert::cuda::uploaded_bytes.load() : edgert::cuda::downloaded_bytes.load();
}
