// Program::run: executes the planned steps in order.
#include <new>
#include <stdexcept>
#include "caught_exception.hpp"
#include "edgert/runtime.hpp"

namespace edgert {
namespace {

Status run_kernel(const Node& node, KernelFn kernel, const void* prepared,
                  std::vector<Tensor>& values) {
  KernelContext context;
  context.op = node.op.c_str();
  context.prepared = prepared;
  context.attributes = &node.attributes;
  for (int32_t index : node.inputs) context.inputs.push_back(index < 0 ? nullptr : &values[index]);
  std::vector<Tensor> outputs(node.outputs.size());
  context.outputs = &outputs;
  Status status = kernel(context);
  if (!status.ok()) return Status(status.code(), node.op + ": " + status.message());
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined()) {
      return Status(Code::Internal, node.op + ": kernel left output " + std::to_string(i) + " unset");
    }
    values[node.outputs[i]] = std::move(outputs[i]);
  }
  return Status::success();
}

// The kernel's own state for a node (packed weights), made on its first run from the node's
// constant inputs and attributes.
Status prepare_kernel(const Graph& graph, const Node& node, PrepareFn prepare,
                      std::shared_ptr<const void>& state) {
  PrepareContext context;
  context.op = node.op.c_str();
  context.attributes = &node.attributes;
  for (int32_t index : node.inputs) {
    const bool constant = index >= 0 && graph.values[static_cast<size_t>(index)].is_constant;
    context.constants.push_back(constant ? &graph.values[static_cast<size_t>(index)].constant : nullptr);
  }
  Status status = prepare(context, state);
  if (!status.ok()) return Status(status.code(), node.op + ": preparing: " + status.message());
  return Status::success();
}

// The backend's state for `step`, made on the step's first run and kept for later ones.
Status prepare_step(const Graph& graph, Backend& backend, size_t first, size_t count,
                    std::shared_ptr<Prepared>& prepared) {
  std::unique_ptr<Prepared> made;
  Status status = backend.prepare(graph, first, count, made);
  if (status.ok() && made == nullptr) status = Status(Code::Internal, "prepared nothing");
  if (!status.ok()) {
    return Status(status.code(), std::string(backend.name()) + ": preparing nodes " +
                                     std::to_string(first) + "..: " + status.message());
  }
  prepared = std::move(made);
  return Status::success();
}

}  // namespace

Status Program::run() {
  try {
    return run_checked();
  } catch (const std::length_error& error) {
    return Status(Code::InvalidArgument, std::string("a tensor size is too large: ") + error.what());
  } catch (const std::bad_alloc&) {
    return Status(Code::OutOfMemory, "out of memory while running the program");
  } catch (...) {  // another library's std:: exception (caught_exception.hpp), or any other
    return caught_exception_status(Code::InvalidArgument, "while running the program");
  }
}

Status Program::run_checked() {
  if (!planned_) EDGERT_RETURN_IF_ERROR(plan());
  // Every computed value is cleared first: a failed run leaves no previous outputs behind.
  std::vector<bool> kept(values_.size(), false);
  for (size_t input : graph_.inputs) kept[input] = true;
  for (size_t i = 0; i < values_.size(); ++i) {
    if (!kept[i] && !graph_.values[i].is_constant) values_[i] = Tensor();
  }
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    if (!values_[graph_.inputs[i]].defined()) {
      return Status(Code::InvalidArgument, "input " + std::to_string(i) + " was not set");
    }
  }
  delegated_.clear();
  for (Step& step : steps_) {
    if (step.backend == nullptr) {
      const Node& node = graph_.nodes[step.first];
      if (step.prepare_kernel != nullptr && !step.kernel_prepared) {
        EDGERT_RETURN_IF_ERROR(prepare_kernel(graph_, node, step.prepare_kernel, step.kernel_state));
        step.kernel_prepared = true;
      }
      EDGERT_RETURN_IF_ERROR(run_kernel(node, step.kernel, step.kernel_state.get(), values_));
      continue;
    }
    if (step.prepared == nullptr) {
      EDGERT_RETURN_IF_ERROR(prepare_step(graph_, *step.backend, step.first, step.count,
                                          step.prepared));
    }
    Status status = step.prepared->run(values_);
    if (!status.ok()) {
      return Status(status.code(), std::string(step.backend->name()) + ": " + status.message());
    }
    bool counted = false;
    for (auto& [name, count] : delegated_) {
      if (name == step.backend->name()) count += step.count, counted = true;
    }
    if (!counted) delegated_.emplace_back(step.backend->name(), step.count);
  }
  for (int32_t index : graph_.outputs) values_[index] = values_[index].contiguous();
  return Status::success();
}

const Tensor& Program::output(size_t index) const {
  static const Tensor empty;
  return index < graph_.outputs.size() ? values_[graph_.outputs[index]] : empty;
}

size_t Program::delegated_nodes(const std::string& backend) const {
  for (const auto& [name, count] : delegated_) {
    if (name == backend) return count;
  }
  return 0;
}

}  // namespace edgert
