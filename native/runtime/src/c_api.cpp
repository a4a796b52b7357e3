// The C API (edgert.h): opaque handles over the C++ API, errors kept per thread.
// No exception crosses it: every entry point runs inside `guarded`, which maps allocation
// failures to EDGERT_ERROR_OUT_OF_MEMORY and anything else to a status with its message,
// including exceptions of another library's copy of the C++ runtime (caught_exception.hpp).
// Each program carries a mutex: calls on one program from several threads are serialized.
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

#include "caught_exception.hpp"
#include "edgert/edgert.h"
#include "edgert/runtime.hpp"
#include "registry_internal.hpp"

#ifndef EDGERT_VERSION_STRING
#define EDGERT_VERSION_STRING "0.0.0"
#endif

struct edgert_program {
  std::unique_ptr<edgert::Program> program;
  mutable std::mutex lock;
};

namespace {

thread_local std::string last_error;
constexpr size_t kMaxDims = 32;  // EDGERT_MAX_DIMS

edgert_status fail(edgert_status code, std::string message) {
  try {
    last_error = std::move(message);
  } catch (...) {
    // no memory for the message: the status still says what happened
  }
  return code;
}

// Runs `body` (returning edgert_status) with every exception mapped to a status.
template <typename Body>
edgert_status guarded(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return fail(EDGERT_ERROR_OUT_OF_MEMORY, "out of memory");
  } catch (const std::length_error& error) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, std::string("size too large: ") + error.what());
  } catch (const std::system_error& error) {
    return fail(EDGERT_ERROR_UNAVAILABLE, std::string("system resource: ") + error.what());
  } catch (const std::exception& error) {
    return fail(EDGERT_ERROR_INTERNAL, error.what());
  } catch (...) {  // another library's std:: exception, or a type no handler names
    const edgert::Status status = edgert::caught_exception_status(edgert::Code::InvalidArgument, "");
    return fail(static_cast<edgert_status>(status.code()), status.message());
  }
}

// For entry points that return a value instead of a status: `fallback` on any exception.
template <typename Value, typename Body>
Value guarded_value(Value fallback, Body&& body) noexcept {
  try {
    return body();
  } catch (...) {
    return fallback;
  }
}

edgert_status report(const edgert::Status& status) {
  if (status.ok()) return EDGERT_OK;
  return fail(static_cast<edgert_status>(status.code()), status.message());
}

edgert_status require_program(const edgert_program* program) {
  if (program == nullptr || !program->program) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null program handle");
  }
  return EDGERT_OK;
}

edgert_status adopt(const edgert::Status& status, std::unique_ptr<edgert::Program> loaded,
                    edgert_program** program) {
  if (!status.ok()) return report(status);
  *program = new edgert_program{std::move(loaded)};
  return EDGERT_OK;
}

std::vector<std::string> split_names(const char* names) {
  std::vector<std::string> result;
  std::stringstream stream(names);
  std::string name;
  while (std::getline(stream, name, ',')) {
    if (!name.empty()) result.push_back(name);
  }
  return result;
}

}  // namespace

namespace edgert {
const char* version() { return EDGERT_VERSION_STRING; }
}  // namespace edgert

extern "C" {

EDGERT_API const char* edgert_runtime_component(void) { return "runtime"; }

const char* edgert_version(void) { return EDGERT_VERSION_STRING; }
const char* edgert_last_error(void) { return last_error.c_str(); }

size_t edgert_dtype_size(edgert_dtype dtype) {
  return edgert::dtype_is_valid(static_cast<uint32_t>(dtype))
             ? edgert::dtype_size(static_cast<edgert::DType>(dtype))
             : 0;
}

edgert_status edgert_program_load_file(const char* path, edgert_program** program) {
  if (path == nullptr || program == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null argument");
  *program = nullptr;
  return guarded([&] {
    std::unique_ptr<edgert::Program> loaded;
    edgert::Status status = edgert::Program::load_file(path, loaded);
    return adopt(status, std::move(loaded), program);
  });
}

edgert_status edgert_program_load_bytes(const void* data, size_t size, edgert_program** program) {
  if (program == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null program pointer");
  *program = nullptr;
  return guarded([&] {
    std::unique_ptr<edgert::Program> loaded;
    edgert::Status status = edgert::Program::load_bytes(data, size, loaded);
    return adopt(status, std::move(loaded), program);
  });
}

void edgert_program_free(edgert_program* program) { delete program; }

edgert_status edgert_program_set_backends(edgert_program* program, const char* names) {
  if (edgert_status code = require_program(program)) return code;
  return guarded([&] {
    std::lock_guard<std::mutex> hold(program->lock);
    return report(program->program->set_backends(split_names(names ? names : "")));
  });
}

size_t edgert_program_delegated_nodes(const edgert_program* program, const char* backend) {
  if (require_program(program) != EDGERT_OK || backend == nullptr) return 0;
  return guarded_value(size_t{0}, [&] {
    std::lock_guard<std::mutex> hold(program->lock);
    return program->program->delegated_nodes(backend);
  });
}

size_t edgert_program_input_count(const edgert_program* program) {
  return require_program(program) == EDGERT_OK ? program->program->input_count() : 0;
}

size_t edgert_program_output_count(const edgert_program* program) {
  return require_program(program) == EDGERT_OK ? program->program->output_count() : 0;
}

edgert_status edgert_program_input_info(const edgert_program* program, size_t index,
                                        edgert_dtype* dtype, int64_t* shape, size_t capacity,
                                        size_t* ndim) {
  if (edgert_status code = require_program(program)) return code;
  const edgert::Graph& graph = program->program->graph();
  if (index >= graph.inputs.size()) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "input index out of range");
  const edgert::ValueInfo& info = graph.values[graph.inputs[index]];
  if (dtype) *dtype = static_cast<edgert_dtype>(info.dtype);
  if (ndim) *ndim = info.shape.size();
  for (size_t i = 0; shape != nullptr && i < info.shape.size() && i < capacity; ++i) shape[i] = info.shape[i];
  return EDGERT_OK;
}

edgert_status edgert_program_set_input(edgert_program* program, size_t index, edgert_dtype dtype,
                                       const int64_t* shape, size_t ndim, const void* data,
                                       size_t nbytes) {
  if (edgert_status code = require_program(program)) return code;
  if (!edgert::dtype_is_valid(static_cast<uint32_t>(dtype))) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, "unknown dtype code " + std::to_string(dtype));
  }
  if (ndim > 0 && shape == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null shape");
  if (ndim > kMaxDims) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, std::to_string(ndim) + " dimensions: at most " +
                                                   std::to_string(kMaxDims) + " are supported");
  }
  return guarded([&] {
  std::vector<int64_t> dims(shape, shape + ndim);
  size_t expected = edgert::dtype_size(static_cast<edgert::DType>(dtype));
  for (int64_t dim : dims) {
    if (dim < 0 || (dim != 0 && expected > (size_t{1} << 62) / static_cast<size_t>(dim))) {
      return fail(EDGERT_ERROR_INVALID_ARGUMENT, "invalid dimension " + std::to_string(dim));
    }
    expected *= static_cast<size_t>(dim);
  }
  if (nbytes != expected) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, "input " + std::to_string(index) + ": " +
                                                   std::to_string(nbytes) + " bytes given, shape and dtype need " +
                                                   std::to_string(expected));
  }
  if (expected > 0 && data == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null input data");
  edgert::Tensor tensor(static_cast<edgert::DType>(dtype), dims);
  if (expected) std::memcpy(tensor.data(), data, expected);
  std::lock_guard<std::mutex> hold(program->lock);
  return report(program->program->set_input(index, std::move(tensor)));
  });
}

edgert_status edgert_program_run(edgert_program* program) {
  if (edgert_status code = require_program(program)) return code;
  return guarded([&] {
    std::lock_guard<std::mutex> hold(program->lock);
    return report(program->program->run());
  });
}

edgert_status edgert_program_output(const edgert_program* program, size_t index,
                                    edgert_dtype* dtype, const int64_t** shape, size_t* ndim,
                                    const void** data, size_t* nbytes) {
  if (edgert_status code = require_program(program)) return code;
  if (index >= program->program->output_count()) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "output index out of range");
  std::lock_guard<std::mutex> hold(program->lock);
  const edgert::Tensor& tensor = program->program->output(index);
  if (!tensor.defined()) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "output not computed yet: run the program first");
  if (dtype) *dtype = static_cast<edgert_dtype>(tensor.dtype());
  if (shape) *shape = tensor.shape().data();
  if (ndim) *ndim = tensor.shape().size();
  if (data) *data = tensor.data();
  if (nbytes) *nbytes = tensor.nbytes();
  return EDGERT_OK;
}

size_t edgert_operator_count(void) {
  return guarded_value(size_t{0}, [] { return edgert::registry::operator_count(); });
}
const char* edgert_operator_name(size_t index) {
  return guarded_value<const char*>(nullptr, [&] { return edgert::registry::operator_name(index); });
}
const char* edgert_operator_owner(size_t index) {
  return guarded_value<const char*>(nullptr, [&] { return edgert::registry::operator_owner(index); });
}
size_t edgert_backend_count(void) {
  return guarded_value(size_t{0}, [] { return edgert::registry::backend_count(); });
}
const char* edgert_backend_name(size_t index) {
  return guarded_value<const char*>(nullptr, [&] { return edgert::registry::backend_name(index); });
}
const char* edgert_backend_owner(size_t index) {
  return guarded_value<const char*>(nullptr, [&] { return edgert::registry::backend_owner(index); });
}

}  // extern "C"
