// Loading (from a mapped file, a copy or borrowed bytes) and planning: each node onto a
// backend or a registered kernel, and when each computed value can be released.
#include <algorithm>
#include <cstring>
#include <new>
#include <sstream>
#include <stdexcept>

#include "caught_exception.hpp"
#include "edgert/runtime.hpp"
#include "memory_limit.hpp"
#include "program_file.hpp"
#include "program_format.hpp"
#include "registry_internal.hpp"
#include "shape_text.hpp"

#ifndef EDGERT_CUDA_VARIANT
#define EDGERT_CUDA_VARIANT ""
#endif

namespace edgert {
namespace {

// Which component provides the operators of a namespace, for the "unknown operator" hint.
std::string provider_hint(const std::string& op) {
  if (op.rfind("edgert_quantized::", 0) == 0) {
    return "; operators of namespace 'edgert_quantized::' are provided by the kernels_quantized "
           "component (libedgert_kernels_quantized): link edgert::kernels_quantized "
           "(EDGERT_QUANTIZED_KERNELS_LIBRARY) or load it before loading the program";
  }
  if (op.rfind("edgert::", 0) == 0) {
    return "; operators of namespace 'edgert::' are provided by the kernels component "
           "(libedgert_kernels): link edgert::kernels or load it before loading the program";
  }
  return "; no edgert component provides this namespace";
}

}  // namespace

std::string unknown_backend_message(const std::string& name) {
  std::string message = "unknown backend '" + name + "'";
  if (name == "cuda") {
    const std::string variant = EDGERT_CUDA_VARIANT;
    if (variant.empty()) {
      return message +
             ": this is the CPU build of edgert, which has no CUDA delegate; install "
             "edgert-cu12 or edgert-cu13 for backend_cuda (pip uninstall -y edgert && "
             "pip install edgert-cu12, for a CUDA 12 driver; edgert-cu13 for CUDA 13)";
    }
    return message + ": this " + variant +
           " build of edgert has the CUDA delegate, but "
           "libedgert_backend_cuda is not loaded: link edgert::backend_cuda "
           "(EDGERT_CUDA_BACKEND_LIBRARY) or load the library before choosing backends";
  }
  if (name == "cpu") {
    return message +
           ": libedgert_backend_cpu is not loaded: link edgert::backend_cpu (it is in "
           "EDGERT_LIBRARIES) or load the library before choosing backends";
  }
  return message;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream text;
  text << '[';
  for (size_t i = 0; i < shape.size(); ++i) text << (i ? ", " : "") << shape[i];
  text << ']';
  return text.str();
}

namespace {

Status check_against_declaration(const ValueInfo& declared, const Tensor& tensor, size_t index) {
  const std::string where = "input " + std::to_string(index);
  if (tensor.dtype() != declared.dtype) {
    return Status(Code::InvalidArgument,
                  where + ": expected dtype " + dtype_name(declared.dtype) + ", got " + dtype_name(tensor.dtype()));
  }
  bool matches = tensor.shape().size() == declared.shape.size();
  for (size_t i = 0; matches && i < declared.shape.size(); ++i) {
    matches = declared.shape[i] == -1 ? tensor.shape()[i] >= 0 : tensor.shape()[i] == declared.shape[i];
  }
  if (!matches) {
    return Status(Code::InvalidArgument,
                  where + ": expected shape " + shape_text(declared.shape) + ", got " + shape_text(tensor.shape()));
  }
  return Status::success();
}

}  // namespace

// ------------------------------------------------------------------------------- loading

Status Program::load_file(const std::string& path, std::unique_ptr<Program>& program) {
  try {
    ProgramFile file;
    EDGERT_RETURN_IF_ERROR(open_program_file(path, kCopyFilesBelow, file));
    return load_checked(file.data, file.size, std::move(file.owner), file.storage, program);
  } catch (const std::bad_alloc&) {
    return Status(Code::OutOfMemory, "out of memory while reading program file '" + path + "'");
  }
}

Status Program::load_bytes(const void* data, size_t size, std::unique_ptr<Program>& program) {
  if (data == nullptr && size != 0) return Status(Code::InvalidArgument, "null program data");
  try {
    std::shared_ptr<void> copy = allocate_program_bytes(size);
    void* bytes = copy.get();  // taken before the copy's owner moves into the call
    if (size) std::memcpy(bytes, data, size);
    return load_checked(bytes, size, std::move(copy), ConstantStorage::Copied, program);
  } catch (const std::bad_alloc&) {
    return Status(Code::OutOfMemory, "out of memory while copying the program's bytes");
  }
}

Status Program::load_borrowed(const void* data, size_t size, std::shared_ptr<const void> keep_alive,
                              std::unique_ptr<Program>& program) {
  if (data == nullptr && size != 0) return Status(Code::InvalidArgument, "null program data");
  // Constants are read in place at their offsets in the file, which are multiples of 16.
  if (reinterpret_cast<uintptr_t>(data) % format::kConstantAlignment != 0) {
    return load_bytes(data, size, program);
  }
  return load_checked(data, size, std::move(keep_alive), ConstantStorage::Borrowed, program);
}

Status Program::load_checked(const void* data, size_t size, std::shared_ptr<const void> keep_alive,
                             ConstantStorage storage, std::unique_ptr<Program>& program) {
  try {
    std::unique_ptr<Program> loaded(new Program());
    EDGERT_RETURN_IF_ERROR(parse_program_in_place(data, size, keep_alive, loaded->graph_));
    // Every attribute of the kind its operator declared (registry.hpp), for every operator,
    // before any kernel could read a default in place of a mistaken value.
    for (size_t i = 0; i < loaded->graph_.nodes.size(); ++i) {
      EDGERT_RETURN_IF_ERROR(check_attribute_kinds(loaded->graph_.nodes[i], i));
    }
    loaded->adopt_constants(storage);
    EDGERT_RETURN_IF_ERROR(memory_limit_from_environment(loaded->memory_limit_));
    EDGERT_RETURN_IF_ERROR(loaded->plan());
    program = std::move(loaded);
    return Status::success();
  } catch (const std::length_error& error) {
    return Status(Code::InvalidProgram, std::string("a tensor size is too large: ") + error.what());
  } catch (const std::bad_alloc&) {
    return Status(Code::OutOfMemory, "out of memory while loading the program");
  } catch (...) {  // another library's std:: exception (caught_exception.hpp), or any other
    return caught_exception_status(Code::InvalidProgram, "while loading the program");
  }
}

// The constants become values; their memory is what the memory plan reports as retained.
void Program::adopt_constants(ConstantStorage storage) {
  values_.resize(graph_.values.size());
  memory_ = MemoryPlan();
  memory_.constants = storage;
  for (size_t i = 0; i < graph_.values.size(); ++i) {
    if (!graph_.values[i].is_constant) continue;
    values_[i] = graph_.values[i].constant;
    memory_.constant_bytes += values_[i].nbytes();
  }
  measure_constants();
}

// --------------------------------------------------------------------------------- planning

Status Program::set_backends(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    Backend* backend = find_backend(name);
    if (backend == nullptr) return Status(Code::NotFound, unknown_backend_message(name));
    Status available = backend->available();
    if (!available.ok()) {
      return Status(Code::Unavailable, "backend '" + name + "' is unavailable: " + available.message());
    }
  }
  backend_names_ = names;
  default_backends_ = false;
  return plan();
}

void Program::use_default_backends() {
  default_backends_ = true;
  planned_ = false;
}

namespace {

// The backends a plan tries, in order: the chosen names, or every available registered one
// by priority (then name).
std::vector<Backend*> backends_to_try(bool default_backends, const std::vector<std::string>& names) {
  std::vector<Backend*> chosen;
  if (!default_backends) {
    for (const std::string& name : names) chosen.push_back(find_backend(name));
    return chosen;
  }
  for (const OperatorEntry& entry : list_backends()) {  // sorted by name
    Backend* backend = find_backend(entry.name);
    if (backend != nullptr && backend->available().ok()) chosen.push_back(backend);
  }
  std::stable_sort(chosen.begin(), chosen.end(),
                   [](const Backend* a, const Backend* b) { return a->priority() > b->priority(); });
  return chosen;
}

}  // namespace

Status Program::plan() {
  const std::vector<Backend*> chosen = backends_to_try(default_backends_, backend_names_);
  std::vector<Step> steps;
  const size_t node_count = graph_.nodes.size();
  for (size_t first = 0; first < node_count;) {
    Step step;
    step.first = first;
    for (Backend* backend : chosen) {
      size_t claimed = backend ? backend->claim(graph_, first) : 0;
      if (claimed == 0) continue;
      step.backend = backend;
      step.count = std::min(claimed, node_count - first);
      break;
    }
    // A backend step is prepared on its first run: planning again (set_backends) does no
    // device work.
    if (step.backend == nullptr) {
      const std::string& op = graph_.nodes[first].op;
      step.kernel = find_operator(op);
      step.prepare_kernel = find_operator_prepare(op);
      if (step.kernel == nullptr) {
        return Status(Code::NotFound,
                      "unknown operator '" + op + "' (node " + std::to_string(first) + ")" + provider_hint(op));
      }
    }
    first += step.count;
    steps.push_back(std::move(step));
  }
  steps_ = std::move(steps);
  plan_contexts();
  plan_releases();
  planned_ = true;
  return Status::success();
}

// Each kernel step's context, once: its inputs point into values_, which never moves after
// loading. Each backend step gets the slot that counts its backend's nodes.
void Program::plan_contexts() {
  delegated_.clear();
  for (Step& step : steps_) {
    if (step.backend != nullptr) {
      auto same = [&step](const auto& entry) { return entry.first == step.backend->name(); };
      auto found = std::find_if(delegated_.begin(), delegated_.end(), same);
      step.delegated_slot = static_cast<size_t>(found - delegated_.begin());
      if (found == delegated_.end()) delegated_.emplace_back(step.backend->name(), 0);
      continue;
    }
    const Node& node = graph_.nodes[step.first];
    step.context.op = node.op.c_str();
    step.context.attributes = &node.attributes;
    step.context.inputs.clear();
    for (int32_t index : node.inputs) {
      step.context.inputs.push_back(index < 0 ? nullptr : &values_[static_cast<size_t>(index)]);
    }
    step.outputs.assign(node.outputs.size(), Tensor());
  }
}

// The memory plan: a computed value (a node output that is not a graph output) is released
// right after the last step that reads it, or after the step that makes it when nothing
// does. A backend step reads every input of its nodes. Inputs, constants and graph outputs
// are kept (a node never writes an input or a constant: program_validate.cpp).
void Program::plan_releases() {
  const size_t none = steps_.size();
  std::vector<size_t> last_step(values_.size(), none);
  std::vector<bool> output(values_.size(), false);
  for (int32_t index : graph_.outputs) output[static_cast<size_t>(index)] = true;
  computed_.clear();
  computed_outputs_.clear();
  for (size_t s = 0; s < steps_.size(); ++s) {
    Step& step = steps_[s];
    step.writes.clear();
    step.releases.clear();
    for (size_t n = step.first; n < step.first + step.count; ++n) {
      for (int32_t index : graph_.nodes[n].inputs) {
        if (index >= 0) last_step[static_cast<size_t>(index)] = s;
      }
      for (int32_t index : graph_.nodes[n].outputs) {
        last_step[static_cast<size_t>(index)] = s;  // a value is made once, before any reader
        step.writes.push_back(index);
        computed_.push_back(index);
      }
    }
  }
  memory_.released_values = 0;
  for (int32_t index : computed_) {
    const size_t value = static_cast<size_t>(index);
    if (output[value]) {
      computed_outputs_.push_back(index);
    } else {
      steps_[last_step[value]].releases.push_back(index);
      ++memory_.released_values;
    }
  }
}

Status Program::set_input(size_t index, Tensor tensor) {
  if (index >= graph_.inputs.size()) {
    return Status(Code::InvalidArgument, "input index " + std::to_string(index) + " out of range (program has " +
                                             std::to_string(graph_.inputs.size()) + " inputs)");
  }
  if (!tensor.defined()) return Status(Code::InvalidArgument, "input " + std::to_string(index) + " has no data");
  const int32_t value = graph_.inputs[index];
  EDGERT_RETURN_IF_ERROR(check_against_declaration(graph_.values[value], tensor, index));
  values_[value] = tensor.is_contiguous() ? std::move(tensor) : tensor.contiguous();
  return Status::success();
}

// After a successful run only the outputs are left of it (the plan released the rest), and a
// failed run discarded what it made: the inputs and outputs are all there is to drop.
void Program::release_values() {
  for (int32_t index : graph_.inputs) values_[static_cast<size_t>(index)] = Tensor();
  for (int32_t index : computed_outputs_) values_[static_cast<size_t>(index)] = Tensor();
}

}  // namespace edgert
