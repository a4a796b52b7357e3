// The export plugin: thin C wrappers that run registered edgert_quantized:: kernels.
#include "export_plugin.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "edgert/registry.hpp"

namespace {

thread_local std::string last_error;

int fail(edgert::Code code, std::string message) {
  last_error = std::move(message);
  return static_cast<int>(code);
}

// A non-owning view over caller memory (which outlives the call).
edgert::Tensor borrow(edgert::DType dtype, std::vector<int64_t> shape, const void* data) {
  std::vector<int64_t> strides = edgert::Tensor::contiguous_strides(shape);
  return edgert::Tensor::view(dtype, std::move(shape), std::move(strides), const_cast<void*>(data), nullptr);
}

// Runs a registered operator; `outputs` receives its results.
int run_operator(const char* name, const std::vector<const edgert::Tensor*>& inputs,
                 const edgert::Attributes& attributes, std::vector<edgert::Tensor>& outputs) {
  const edgert::KernelFn kernel = edgert::find_operator(name);
  if (kernel == nullptr) {
    return fail(edgert::Code::NotFound,
                std::string("operator ") + name + " is not registered; is libedgert_kernels_quantized loaded?");
  }
  edgert::KernelContext context;
  context.op = name;
  context.inputs = inputs;
  context.attributes = &attributes;
  context.outputs = &outputs;
  const edgert::Status status = kernel(context);
  if (!status.ok()) return fail(status.code(), std::string(name) + ": " + status.message());
  return 0;
}

// Both dimensions non-negative and their product (in 8-byte elements) within the checked
// tensor bound: `rows * cols` below never overflows.
bool valid_sizes(int64_t a, int64_t b) {
  int64_t count = 0;
  return a >= 0 && b >= 0 && edgert::checked_element_count({a, b}, 8, &count);
}

// No exception crosses the plugin's C entry points (they are called through ctypes).
template <typename Body>
int guarded(const char* what, Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(edgert::Code::OutOfMemory, std::string(what) + ": out of memory");
  } catch (const std::exception& error) {
    return fail(edgert::Code::Internal, std::string(what) + ": " + error.what());
  } catch (...) {
    return fail(edgert::Code::Internal, std::string(what) + ": unknown failure");
  }
}

}  // namespace

extern "C" const char* edgert_export_plugin_component(void) {
  return "export_plugin";
}

extern "C" const char* edgert_export_last_error(void) {
  return last_error.c_str();
}

extern "C" int edgert_export_quantize_weights_per_channel(const float* weight, int64_t rows, int64_t cols,
                                                          int8_t* quantized, float* scales, int32_t* zero_points) {
  return guarded("quantize_weights_per_channel", [&]() -> int {
    if (!valid_sizes(rows, cols) || (rows * cols > 0 && (!weight || !quantized)) ||
        (rows > 0 && (!scales || !zero_points))) {
      return fail(edgert::Code::InvalidArgument, "quantize_weights_per_channel: invalid sizes or null buffers");
    }
    for (int64_t r = 0; r < rows; ++r) {
      float largest = 0.0f;
      for (int64_t k = 0; k < cols; ++k) largest = std::max(largest, std::fabs(weight[r * cols + k]));
      if (!std::isfinite(largest)) {
        return fail(edgert::Code::InvalidArgument,
                    "quantize_weights_per_channel: row " + std::to_string(r) + " holds a non-finite value");
      }
      scales[r] = largest > 0.0f ? static_cast<float>(static_cast<double>(largest) / 127.0) : 1.0f;
      zero_points[r] = 0;
    }
    const edgert::Tensor w = borrow(edgert::DType::Float32, {rows, cols}, weight);
    const edgert::Tensor s = borrow(edgert::DType::Float32, {rows}, scales);
    const edgert::Tensor z = borrow(edgert::DType::Int32, {rows}, zero_points);
    edgert::Attributes attributes;
    attributes.set("axis", int64_t{0});
    attributes.set("dtype", std::string("int8"));
    std::vector<edgert::Tensor> outputs(1);
    if (int code = run_operator("edgert_quantized::quantize_per_channel", {&w, &s, &z}, attributes, outputs)) {
      return code;
    }
    if (rows * cols > 0) std::memcpy(quantized, outputs[0].data(), outputs[0].nbytes());
    return 0;
  });
}

extern "C" int edgert_export_quantized_linear(const float* input, int64_t rows, int64_t in_features,
                                              const int8_t* weight, const float* scales, const int32_t* zero_points,
                                              const float* bias, int64_t out_features, float* output) {
  return guarded("quantized_linear", [&]() -> int {
    if (!valid_sizes(rows, in_features) || !valid_sizes(out_features, in_features) ||
        !valid_sizes(rows, out_features) || (rows * in_features > 0 && !input) ||
        (out_features * in_features > 0 && !weight) || (out_features > 0 && (!scales || !zero_points)) ||
        (rows * out_features > 0 && !output)) {
      return fail(edgert::Code::InvalidArgument, "quantized_linear: invalid sizes or null buffers");
    }
    const edgert::Tensor x = borrow(edgert::DType::Float32, {rows, in_features}, input);
    const edgert::Tensor w = borrow(edgert::DType::Int8, {out_features, in_features}, weight);
    const edgert::Tensor s = borrow(edgert::DType::Float32, {out_features}, scales);
    const edgert::Tensor z = borrow(edgert::DType::Int32, {out_features}, zero_points);
    const edgert::Tensor b = borrow(edgert::DType::Float32, {out_features}, bias);
    std::vector<const edgert::Tensor*> inputs = {&x, &w, &s, &z};
    if (bias) inputs.push_back(&b);
    std::vector<edgert::Tensor> outputs(1);
    if (int code = run_operator("edgert_quantized::linear", inputs, edgert::Attributes(), outputs)) return code;
    if (rows * out_features > 0) std::memcpy(output, outputs[0].data(), outputs[0].nbytes());
    return 0;
  });
}
