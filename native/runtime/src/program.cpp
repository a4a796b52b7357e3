// The executor: plans each node onto a backend or a registered kernel, checks inputs, runs.
#include <new>
#include <stdexcept>
#include <algorithm>
#include <fstream>
#include <iterator>
#include <sstream>

#include "caught_exception.hpp"
#include "edgert/runtime.hpp"

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

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream text;
  text << '[';
  for (size_t i = 0; i < shape.size(); ++i) text << (i ? ", " : "") << shape[i];
  text << ']';
  return text.str();
}

Status check_against_declaration(const ValueInfo& declared, const Tensor& tensor, size_t index) {
  const std::string where = "input " + std::to_string(index);
  if (tensor.dtype() != declared.dtype) {
    return Status(Code::InvalidArgument, where + ": expected dtype " + dtype_name(declared.dtype) +
                                             ", got " + dtype_name(tensor.dtype()));
  }
  bool matches = tensor.shape().size() == declared.shape.size();
  for (size_t i = 0; matches && i < declared.shape.size(); ++i) {
    matches = declared.shape[i] == -1 ? tensor.shape()[i] >= 0
                                      : tensor.shape()[i] == declared.shape[i];
  }
  if (!matches) {
    return Status(Code::InvalidArgument, where + ": expected shape " +
                                             shape_text(declared.shape) + ", got " +
                                             shape_text(tensor.shape()));
  }
  return Status::success();
}

}  // namespace

Status Program::load_file(const std::string& path, std::unique_ptr<Program>& program) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return Status(Code::NotFound, "cannot open program file '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) return Status(Code::NotFound, "cannot read program file '" + path + "'");
  return load_bytes(bytes.data(), bytes.size(), program);
}

Status Program::load_bytes(const void* data, size_t size, std::unique_ptr<Program>& program) {
  try {
    return load_checked(data, size, program);
  } catch (const std::length_error& error) {
    return Status(Code::InvalidProgram, std::string("a tensor size is too large: ") + error.what());
  } catch (const std::bad_alloc&) {
    return Status(Code::OutOfMemory, "out of memory while loading the program");
  } catch (...) {  // another library's std:: exception (caught_exception.hpp), or any other
    return caught_exception_status(Code::InvalidProgram, "while loading the program");
  }
}

Status Program::load_checked(const void* data, size_t size, std::unique_ptr<Program>& program) {
  std::unique_ptr<Program> loaded(new Program());
  EDGERT_RETURN_IF_ERROR(parse_program(data, size, loaded->graph_));
  loaded->values_.resize(loaded->graph_.values.size());
  for (size_t i = 0; i < loaded->graph_.values.size(); ++i) {
    if (loaded->graph_.values[i].is_constant) loaded->values_[i] = loaded->graph_.values[i].constant;
  }
  EDGERT_RETURN_IF_ERROR(loaded->plan());
  program = std::move(loaded);
  return Status::success();
}

Status Program::set_backends(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    Backend* backend = find_backend(name);
    if (backend == nullptr) return Status(Code::NotFound, "unknown backend '" + name + "'");
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

Status Program::plan() {
  std::vector<Backend*> chosen;
  if (default_backends_) {
    for (const OperatorEntry& entry : list_backends()) {  // sorted by name
      Backend* backend = find_backend(entry.name);
      if (backend != nullptr && backend->available().ok()) chosen.push_back(backend);
    }
    std::stable_sort(chosen.begin(), chosen.end(), [](const Backend* a, const Backend* b) {
      return a->priority() > b->priority();
    });
  } else {
    for (const std::string& name : backend_names_) chosen.push_back(find_backend(name));
  }
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
    if (step.backend != nullptr) {
      // prepared on the first run: planning again (set_backends) does no device work
    } else {
      const std::string& op = graph_.nodes[first].op;
      step.kernel = find_operator(op);
      step.prepare_kernel = find_operator_prepare(op);
      if (step.kernel == nullptr) {
        return Status(Code::NotFound, "unknown operator '" + op + "' (node " +
                                          std::to_string(first) + ")" + provider_hint(op));
      }
    }
    first += step.count;
    steps.push_back(std::move(step));
  }
  steps_ = std::move(steps);
  planned_ = true;
  return Status::success();
}

Status Program::set_input(size_t index, Tensor tensor) {
  if (index >= graph_.inputs.size()) {
    return Status(Code::InvalidArgument, "input index " + std::to_string(index) +
                                             " out of range (program has " +
                                             std::to_string(graph_.inputs.size()) + " inputs)");
  }
  if (!tensor.defined()) return Status(Code::InvalidArgument, "input " + std::to_string(index) + " has no data");
  const int32_t value = graph_.inputs[index];
  EDGERT_RETURN_IF_ERROR(check_against_declaration(graph_.values[value], tensor, index));
  values_[value] = tensor.contiguous();
  return Status::success();
}

}  // namespace edgert
