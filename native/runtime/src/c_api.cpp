// The C API (edgert.h): opaque handles over the C++ API, errors kept per thread.
// No exception crosses it: every entry point runs inside `guarded`, which maps allocation
// failures to EDGERT_ERROR_OUT_OF_MEMORY and anything else to a status with its message,
// including exceptions of another library's copy of the C++ runtime (caught_exception.hpp).
// Each program carries a mutex: calls on one program from several threads are serialized,
// and edgert_program_run_with holds it across binding, running and reading. A forked child
// gets every program's mutex unlocked (LivePrograms below).
#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>
#if !defined(_WIN32)
#include <pthread.h>
#endif

#include "caught_exception.hpp"
#include "edgert/edgert.h"
#include "edgert/runtime.hpp"
#include "registry_internal.hpp"

#ifndef EDGERT_VERSION_STRING
#define EDGERT_VERSION_STRING "0.0.0"
#endif

struct edgert_tensor {
  edgert::Tensor tensor;
  bool exclusive = false;
};

struct edgert_program {
  std::unique_ptr<edgert::Program> program;
  mutable std::mutex lock;
  // Links of the list of live programs (LivePrograms).
  edgert_program* previous = nullptr;
  edgert_program* next = nullptr;
};

namespace {

// Fork safety. A program's mutex held by another thread when the process forks stays held
// in the child, where that thread does not exist: the child's first call on the program
// would wait forever. Every live program is on a list; fork() takes the list's lock around
// the fork, and in the child re-creates each program's mutex, unlocked. (A run the other
// thread was in the middle of is abandoned; the child's next run starts afresh.)
struct LivePrograms {
  std::mutex mutex;
  edgert_program* first = nullptr;

  void add(edgert_program* program) {
    std::lock_guard<std::mutex> hold(mutex);
    program->next = first;
    if (first != nullptr) first->previous = program;
    first = program;
  }

  void remove(edgert_program* program) {
    std::lock_guard<std::mutex> hold(mutex);
    if (program->previous != nullptr) program->previous->next = program->next;
    if (program->next != nullptr) program->next->previous = program->previous;
    if (first == program) first = program->next;
  }

  void unlock_all_in_child() {
    for (edgert_program* program = first; program != nullptr; program = program->next) {
      new (&program->lock) std::mutex();  // the holder is gone: a fresh, unlocked mutex
    }
    mutex.unlock();
  }
};

LivePrograms& live_programs() {
  // Never destroyed: programs may be freed by static destructors of other libraries.
  static LivePrograms* programs = [] {
    auto* made = new LivePrograms();
#if !defined(_WIN32)
    pthread_atfork([] { live_programs().mutex.lock(); }, [] { live_programs().mutex.unlock(); },
                   [] { live_programs().unlock_all_in_child(); });
#endif
    return made;
  }();
  return *programs;
}

thread_local std::string last_error;
thread_local std::string last_warning;
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

edgert_status adopt(const edgert::Status& status, std::unique_ptr<edgert::Program> loaded, edgert_program** program) {
  if (!status.ok()) return report(status);
  const std::string note = edgert::format_note(loaded->graph().format_version);
  auto* made = new edgert_program();
  made->program = std::move(loaded);
  last_warning = note;
  live_programs().add(made);
  *program = made;
  return EDGERT_OK;
}

// An edgert_dtype argument as the number the caller passed: reading a C enum parameter as the
// C++ enum type (even to pass it on by value) is undefined when the value is none of its
// enumerators (UBSan: "load of value 42, which is not a valid value for type
// 'edgert_dtype'"), so its bytes are copied, through a reference, before any other use.
uint32_t dtype_code(const edgert_dtype& dtype) {
  static_assert(sizeof(edgert_dtype) == sizeof(uint32_t), "edgert_dtype is a 32-bit int");
  uint32_t code = 0;
  std::memcpy(&code, &dtype, sizeof code);
  return code;
}

// Checks a caller's tensor description and makes it a tensor: a copy (copy = true) or a view
// read in place. Errors name the input. `code` is the caller's edgert_dtype as a number
// (dtype_code), never an enum value here.
edgert_status make_input(size_t index, uint32_t code, const int64_t* shape, size_t ndim, const void* data,
                         size_t nbytes, bool copy, edgert::Tensor& tensor) {
  if (!edgert::dtype_is_valid(code)) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, "input " + std::to_string(index) + ": unknown dtype code " +
                                                   std::to_string(code) + " (see edgert_dtype in edgert.h)");
  }
  if (ndim > 0 && shape == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null shape");
  if (ndim > kMaxDims) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT,
                std::to_string(ndim) + " dimensions: at most " + std::to_string(kMaxDims) + " are supported");
  }
  const auto type = static_cast<edgert::DType>(code);
  std::vector<int64_t> dims(shape, shape + ndim);
  size_t expected = edgert::dtype_size(type);
  for (int64_t dim : dims) {
    if (dim < 0 || (dim != 0 && expected > (size_t{1} << 62) / static_cast<size_t>(dim))) {
      return fail(EDGERT_ERROR_INVALID_ARGUMENT, "invalid dimension " + std::to_string(dim));
    }
    expected *= static_cast<size_t>(dim);
  }
  if (nbytes != expected) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, "input " + std::to_string(index) + ": " + std::to_string(nbytes) +
                                                   " bytes given, shape and dtype need " + std::to_string(expected));
  }
  if (expected > 0 && data == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null input data");
  if (copy) {
    tensor = edgert::Tensor::uninitialized(type, std::move(dims));  // every byte is written
    if (expected) std::memcpy(tensor.data(), data, expected);
  } else {
    tensor = edgert::Tensor::view(type, std::move(dims), {}, const_cast<void*>(data), nullptr);
  }
  return EDGERT_OK;
}

// The caller's release function as a keep-alive: called once, when the last constant lets
// go of the bytes. Null for a null function. When no memory is left for it, release is
// called at once and this throws std::bad_alloc (the load fails for want of memory anyway).
std::shared_ptr<const void> release_guard(void (*function)(void*), void* context) {
  struct Release {
    void (*function)(void*);
    void* context;
  };
  if (function == nullptr) return nullptr;
  auto* release = new (std::nothrow) Release{function, context};
  if (release == nullptr) {
    function(context);
    throw std::bad_alloc();
  }
  // Should the control block not be allocated, the deleter runs (and releases) before the throw.
  return std::shared_ptr<const void>(release, [](const Release* held) {
    held->function(held->context);
    delete held;
  });
}

// Binds the caller's inputs in place (views, not copies) and runs.
edgert_status bind_and_run(edgert::Program& program, const edgert_tensor_view* inputs, size_t count) {
  if (count != program.input_count()) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, "the program takes " + std::to_string(program.input_count()) +
                                                   " inputs, " + std::to_string(count) + " given");
  }
  if (count > 0 && inputs == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null inputs");
  for (size_t i = 0; i < count; ++i) {
    const edgert_tensor_view& input = inputs[i];
    edgert::Tensor tensor;
    if (edgert_status code = make_input(i, dtype_code(input.dtype), input.shape, input.ndim, input.data, input.nbytes,
                                        /*copy=*/false, tensor)) {
      return code;
    }
    if (edgert_status code = report(program.set_input(i, std::move(tensor)))) return code;
  }
  return report(program.run());
}

// edgert_program_run_with's unit under the program's lock: bind, run, take the outputs, and
// drop whatever the program still holds of the call, whatever happens.
// `memory_limit` (null: the program's own) applies to this call only.
edgert_status run_and_take(edgert_program& program, const edgert_tensor_view* inputs, size_t count,
                           std::vector<edgert::Program::Output>& taken, const size_t* memory_limit = nullptr) {
  std::lock_guard<std::mutex> hold(program.lock);
  edgert::Program& held = *program.program;
  const size_t own_limit = held.memory_limit();
  if (memory_limit != nullptr) held.set_memory_limit(*memory_limit);
  edgert_status status = EDGERT_ERROR_INTERNAL;
  try {
    status = bind_and_run(held, inputs, count);
    if (status == EDGERT_OK) taken = held.take_outputs();
  } catch (...) {
    held.release_values();
    held.set_memory_limit(own_limit);
    throw;
  }
  held.release_values();  // nothing borrowed from the caller stays behind
  held.set_memory_limit(own_limit);
  return status;
}

// Makes one edgert_tensor per taken output; on running out of memory, none (and throws).
void hand_over(std::vector<edgert::Program::Output>& taken, edgert_tensor** outputs) {
  try {
    for (size_t i = 0; i < taken.size(); ++i) {
      outputs[i] = new edgert_tensor{std::move(taken[i].tensor), taken[i].exclusive};
    }
  } catch (...) {
    for (size_t i = 0; i < taken.size(); ++i) {
      delete outputs[i];
      outputs[i] = nullptr;
    }
    throw;
  }
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
const char* version() {
  return EDGERT_VERSION_STRING;
}
}  // namespace edgert

extern "C" {

EDGERT_API const char* edgert_runtime_component(void) {
  return "runtime";
}

const char* edgert_version(void) {
  return EDGERT_VERSION_STRING;
}
const char* edgert_last_error(void) {
  return last_error.c_str();
}
const char* edgert_last_warning(void) {
  return last_warning.c_str();
}

uint32_t edgert_program_format_version(const edgert_program* program) {
  if (require_program(program) != EDGERT_OK) return 0;
  return program->program->graph().format_version;  // fixed at load: no lock needed
}

size_t edgert_dtype_size(edgert_dtype dtype) {
  const uint32_t code = dtype_code(dtype);
  return edgert::dtype_is_valid(code) ? edgert::dtype_size(static_cast<edgert::DType>(code)) : 0;
}

edgert_status edgert_program_load_file(const char* path, edgert_program** program) {
  last_warning.clear();
  if (path == nullptr || program == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null argument");
  *program = nullptr;
  return guarded([&] {
    std::unique_ptr<edgert::Program> loaded;
    edgert::Status status = edgert::Program::load_file(path, loaded);
    return adopt(status, std::move(loaded), program);
  });
}

edgert_status edgert_program_load_bytes(const void* data, size_t size, edgert_program** program) {
  last_warning.clear();
  if (program == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null program pointer");
  *program = nullptr;
  return guarded([&] {
    std::unique_ptr<edgert::Program> loaded;
    edgert::Status status = edgert::Program::load_bytes(data, size, loaded);
    return adopt(status, std::move(loaded), program);
  });
}

edgert_status edgert_program_load_borrowed(const void* data, size_t size, void (*release)(void* context), void* context,
                                           edgert_program** program) {
  last_warning.clear();
  if (program == nullptr) {
    if (release != nullptr) release(context);
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null program pointer");
  }
  *program = nullptr;
  return guarded([&] {
    std::shared_ptr<const void> keep_alive = release_guard(release, context);
    std::unique_ptr<edgert::Program> loaded;
    edgert::Status status = edgert::Program::load_borrowed(data, size, std::move(keep_alive), loaded);
    return adopt(status, std::move(loaded), program);
  });
}

void edgert_program_free(edgert_program* program) {
  if (program == nullptr) return;
  live_programs().remove(program);
  delete program;
}

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

edgert_status edgert_program_input_info(const edgert_program* program, size_t index, edgert_dtype* dtype,
                                        int64_t* shape, size_t capacity, size_t* ndim) {
  if (edgert_status code = require_program(program)) return code;
  const edgert::Graph& graph = program->program->graph();
  if (index >= graph.inputs.size()) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "input index out of range");
  const edgert::ValueInfo& info = graph.values[graph.inputs[index]];
  if (dtype) *dtype = static_cast<edgert_dtype>(info.dtype);
  if (ndim) *ndim = info.shape.size();
  for (size_t i = 0; shape != nullptr && i < info.shape.size() && i < capacity; ++i) shape[i] = info.shape[i];
  return EDGERT_OK;
}

edgert_status edgert_program_set_input(edgert_program* program, size_t index, edgert_dtype dtype, const int64_t* shape,
                                       size_t ndim, const void* data, size_t nbytes) {
  if (edgert_status code = require_program(program)) return code;
  const uint32_t code = dtype_code(dtype);  // before anything reads `dtype` as an enum
  return guarded([&] {
    edgert::Tensor tensor;
    if (edgert_status status = make_input(index, code, shape, ndim, data, nbytes, true, tensor)) {
      return status;
    }
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

namespace {

// Runs into the caller's output array; `limit` overrides the program's memory limit for this
// call (nullptr: the program's own).
edgert_status run_into(edgert_program* program, const edgert_tensor_view* inputs, size_t input_count,
                       edgert_tensor** outputs, size_t output_capacity, const size_t* limit) {
  if (edgert_status code = require_program(program)) return code;
  const size_t output_count = program->program->output_count();
  if (output_count > 0 && (outputs == nullptr || output_capacity < output_count)) {
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, "room for " + std::to_string(output_capacity) +
                                                   " outputs given, the program has " + std::to_string(output_count) +
                                                   " (pass an array of edgert_program_output_count() pointers)");
  }
  for (size_t i = 0; i < output_count; ++i) outputs[i] = nullptr;
  return guarded([&] {
    std::vector<edgert::Program::Output> taken;
    if (edgert_status code = run_and_take(*program, inputs, input_count, taken, limit)) return code;
    hand_over(taken, outputs);
    return EDGERT_OK;
  });
}

}  // namespace

edgert_status edgert_program_run_with(edgert_program* program, const edgert_tensor_view* inputs, size_t input_count,
                                      edgert_tensor** outputs, size_t output_capacity) {
  return run_into(program, inputs, input_count, outputs, output_capacity, nullptr);
}

edgert_status edgert_program_run_with_limit(edgert_program* program, const edgert_tensor_view* inputs,
                                            size_t input_count, edgert_tensor** outputs, size_t output_capacity,
                                            uint64_t memory_limit) {
  const size_t limit = static_cast<size_t>(std::min<uint64_t>(memory_limit, std::numeric_limits<size_t>::max()));
  return run_into(program, inputs, input_count, outputs, output_capacity, &limit);
}

edgert_status edgert_program_set_memory_limit(edgert_program* program, uint64_t bytes) {
  if (edgert_status code = require_program(program)) return code;
  std::lock_guard<std::mutex> hold(program->lock);
  program->program->set_memory_limit(
      static_cast<size_t>(std::min<uint64_t>(bytes, std::numeric_limits<size_t>::max())));
  return EDGERT_OK;
}

uint64_t edgert_program_memory_limit(const edgert_program* program) {
  if (require_program(program) != EDGERT_OK) return 0;
  std::lock_guard<std::mutex> hold(program->lock);
  return program->program->memory_limit();
}

edgert_status edgert_tensor_info(const edgert_tensor* tensor, edgert_tensor_view* view, int* exclusive) {
  if (tensor == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null tensor");
  if (view != nullptr) {
    view->dtype = static_cast<edgert_dtype>(tensor->tensor.dtype());
    view->ndim = tensor->tensor.shape().size();
    view->shape = tensor->tensor.shape().data();
    view->data = tensor->tensor.data();
    view->nbytes = tensor->tensor.nbytes();
  }
  if (exclusive != nullptr) *exclusive = tensor->exclusive ? 1 : 0;
  return EDGERT_OK;
}

void edgert_tensor_free(edgert_tensor* tensor) {
  delete tensor;
}

edgert_status edgert_program_memory_plan(const edgert_program* program, edgert_memory_plan* plan) {
  if (edgert_status code = require_program(program)) return code;
  if (plan == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null memory plan pointer");
  std::lock_guard<std::mutex> hold(program->lock);
  const edgert::MemoryPlan& memory = program->program->memory_plan();
  plan->peak_bytes = memory.peak_bytes;
  plan->input_bytes = memory.input_bytes;
  plan->output_bytes = memory.output_bytes;
  plan->constant_bytes = memory.constant_bytes;
  plan->released_values = memory.released_values;
  plan->constants = static_cast<uint32_t>(memory.constants);
  return EDGERT_OK;
}

edgert_status edgert_program_output(const edgert_program* program, size_t index, edgert_dtype* dtype,
                                    const int64_t** shape, size_t* ndim, const void** data, size_t* nbytes) {
  if (edgert_status code = require_program(program)) return code;
  if (index >= program->program->output_count())
    return fail(EDGERT_ERROR_INVALID_ARGUMENT, "output index out of range");
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
const char* edgert_operator_attributes(size_t index) {
  return guarded_value<const char*>(nullptr, [&]() -> const char* {
    const char* name = edgert::registry::operator_name(index);
    return name == nullptr ? nullptr : edgert::operator_attributes(name);
  });
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

edgert_status edgert_backend_available(const char* name) {
  if (name == nullptr) return fail(EDGERT_ERROR_INVALID_ARGUMENT, "null backend name");
  return guarded([&] {
    edgert::Backend* backend = edgert::find_backend(name);
    if (backend == nullptr) {
      return fail(EDGERT_ERROR_NOT_FOUND, edgert::unknown_backend_message(name));
    }
    const edgert::Status available = backend->available();
    if (available.ok()) return EDGERT_OK;
    return fail(EDGERT_ERROR_UNAVAILABLE, "backend '" + std::string(name) + "' is unavailable: " + available.message());
  });
}

namespace {

// The index-th registered backend (by name) whose available() is Ok, or null.
const char* nth_available_backend(size_t index) {
  const size_t count = edgert::registry::backend_count();
  for (size_t i = 0; i < count; ++i) {
    const char* name = edgert::registry::backend_name(i);
    edgert::Backend* backend = name ? edgert::find_backend(name) : nullptr;
    if (backend == nullptr || !backend->available().ok()) continue;
    if (index-- == 0) return name;
  }
  return nullptr;
}

}  // namespace

size_t edgert_available_backend_count(void) {
  return guarded_value(size_t{0}, [] {
    size_t count = 0;
    while (nth_available_backend(count) != nullptr) ++count;
    return count;
  });
}

const char* edgert_available_backend_name(size_t index) {
  return guarded_value<const char*>(nullptr, [&] { return nth_available_backend(index); });
}

}  // extern "C"
