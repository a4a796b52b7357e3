// Program::run: executes the planned steps in order, releasing each computed value as soon
// as its last reader has run (the plan, program.cpp), and accounts for the memory it held.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "caught_exception.hpp"
#include "edgert/runtime.hpp"
#include "memory_limit.hpp"
#include "prepared_cache.hpp"

namespace edgert {
namespace {

// The kernel's own state for a node (packed weights), made on its first run from the node's
// constant inputs and attributes.
Status prepare_kernel(const Graph& graph, const Node& node, PrepareFn prepare, std::shared_ptr<const void>& state) {
  PrepareContext context;
  context.op = node.op.c_str();
  context.attributes = &node.attributes;
  for (int32_t index : node.inputs) {
    const bool constant = index >= 0 && graph.values[static_cast<size_t>(index)].is_constant;
    context.constants.push_back(constant ? &graph.values[static_cast<size_t>(index)].constant : nullptr);
  }
  Status status = prepare_shared(context, prepare, state);
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
    return Status(status.code(), std::string(backend.name()) + ": preparing nodes " + std::to_string(first) +
                                     "..: " + status.message());
  }
  prepared = std::move(made);
  return Status::success();
}

// The bytes a tensor's elements span, from its first element to past its last.
size_t extent_bytes(const Tensor& tensor) {
  const int64_t count = tensor.numel();
  if (count == 0) return 0;
  int64_t last = 0;  // offset of the last element, in elements (strides are never negative)
  for (size_t axis = 0; axis < tensor.shape().size(); ++axis) {
    last += (tensor.shape()[axis] - 1) * tensor.strides()[axis];
  }
  return static_cast<size_t>(last + 1) * dtype_size(tensor.dtype());
}

using Ranges = std::vector<std::pair<uintptr_t, uintptr_t>>;

void add_range(const Tensor& tensor, Ranges& ranges) {
  if (!tensor.defined() || tensor.data() == nullptr) return;
  const size_t bytes = extent_bytes(tensor);
  if (bytes == 0) return;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(tensor.data());
  ranges.emplace_back(begin, begin + bytes);
}

// Sorts `ranges` and merges the ones that overlap or touch, in place.
void merge_ranges(Ranges& ranges) {
  std::sort(ranges.begin(), ranges.end());
  size_t kept = 0;
  for (const auto& range : ranges) {
    if (kept > 0 && range.first <= ranges[kept - 1].second) {
      ranges[kept - 1].second = std::max(ranges[kept - 1].second, range.second);
    } else {
      ranges[kept++] = range;
    }
  }
  ranges.resize(kept);
}

// Bytes of [begin, end) that the merged `ranges` cover (a binary search finds the first).
size_t overlap(uintptr_t begin, uintptr_t end, const Ranges& ranges) {
  auto first = std::lower_bound(ranges.begin(), ranges.end(), begin,
                                [](const auto& range, uintptr_t at) { return range.second <= at; });
  size_t total = 0;
  for (auto range = first; range != ranges.end() && range->first < end; ++range) {
    total += std::min(end, range->second) - std::max(begin, range->first);
  }
  return total;
}

}  // namespace

Status Program::run() {
  Status status;
  std::shared_ptr<MemoryBudget> budget;
  running_step_ = steps_.size();
  try {
    if (memory_limit_ != 0) budget = std::make_shared<MemoryBudget>(memory_limit_);
    MemoryBudgetScope counted(budget);  // (none without a limit)
    status = run_checked();
  } catch (const MemoryLimitReached&) {
    status = budget ? memory_limit_status(budget->held_when_refused, budget->refused_bytes)
                    : Status(Code::OutOfMemory, "out of memory while running the program");
  } catch (const std::length_error& error) {
    status = Status(Code::InvalidArgument, std::string("a tensor size is too large: ") + error.what());
  } catch (const std::bad_alloc&) {
    status = Status(Code::OutOfMemory, "out of memory while running the program");
  } catch (...) {  // another library's std:: exception (caught_exception.hpp), or any other
    status = caught_exception_status(Code::InvalidArgument, "while running the program");
  }
  // A failed run leaves nothing of itself behind: no output, no intermediate.
  if (!status.ok()) discard_computed_values();
  return status;
}

Status Program::run_checked() {
  if (!planned_) EDGERT_RETURN_IF_ERROR(plan());
  // Intermediates were released by the previous run; its outputs go now, so a run that fails
  // leaves no previous output behind.
  for (int32_t index : computed_outputs_) values_[static_cast<size_t>(index)] = Tensor();
  input_ranges_.clear();
  memory_.input_bytes = 0;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const Tensor& input = values_[static_cast<size_t>(graph_.inputs[i])];
    if (!input.defined()) {
      return Status(Code::InvalidArgument, "input " + std::to_string(i) + " was not set");
    }
    memory_.input_bytes += input.nbytes();
    add_range(input, input_ranges_);
  }
  merge_ranges(input_ranges_);
  for (auto& entry : delegated_) entry.second = 0;
  live_.clear();
  memory_.peak_bytes = 0;
  EDGERT_RETURN_IF_ERROR(run_steps());
  memory_.output_bytes = 0;
  for (int32_t index : graph_.outputs) {
    Tensor& output = values_[static_cast<size_t>(index)];
    if (!output.is_contiguous()) output = output.contiguous();
    memory_.output_bytes += output.nbytes();
  }
  return Status::success();
}

namespace {

std::string bytes_text(size_t bytes) {
  std::string text = std::to_string(bytes) + " bytes";
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double scaled = static_cast<double>(bytes);
  int unit = -1;
  while (scaled >= 1024.0 && unit < 5) {
    scaled /= 1024.0;
    ++unit;
  }
  if (unit < 0) return text;
  char shown[32];
  std::snprintf(shown, sizeof shown, " (%.1f %s)", scaled, units[unit]);
  return text + shown;
}

}  // namespace

// The run was refused an allocation of `requested` bytes while it held `held`: the figure
// it needed at least, the limit, and the step that asked.
Status Program::memory_limit_status(size_t held, size_t requested) const {
  std::string where = "finishing the run";
  if (running_step_ < steps_.size()) {
    const Step& step = steps_[running_step_];
    where = step.backend == nullptr
                ? "node " + std::to_string(step.first) + " (" + graph_.nodes[step.first].op + ")"
                : std::string("backend ") + step.backend->name() + "'s nodes " + std::to_string(step.first) + ".." +
                      std::to_string(step.first + step.count - 1);
  }
  const size_t needed = held > ~size_t{0} - requested ? ~size_t{0} : held + requested;
  return Status(Code::OutOfMemory, "memory limit: the run needs at least " + bytes_text(needed) +
                                       ", over its memory limit of " + bytes_text(memory_limit_) + " (" + where +
                                       " asked for " + bytes_text(requested) + " while the run held " +
                                       bytes_text(held) +
                                       "; refused before allocating it: raise the limit, memory_limit= or "
                                       "EDGERT_MEMORY_LIMIT, or run smaller inputs)");
}

Status Program::run_step(size_t index) {
  Step& step = steps_[index];
  if (step.backend != nullptr) {
    if (step.prepared == nullptr) {
      EDGERT_RETURN_IF_ERROR(prepare_step(graph_, *step.backend, step.first, step.count, step.prepared));
    }
    Status status = step.prepared->run(values_);
    if (!status.ok()) {
      return Status(status.code(), std::string(step.backend->name()) + ": " + status.message());
    }
    delegated_[step.delegated_slot].second += step.count;
    return Status::success();
  }
  const Node& node = graph_.nodes[step.first];
  if (step.prepare_kernel != nullptr && !step.kernel_prepared) {
    EDGERT_RETURN_IF_ERROR(prepare_kernel(graph_, node, step.prepare_kernel, step.kernel_state));
    step.kernel_prepared = true;
  }
  step.context.prepared = step.kernel_state.get();
  step.context.outputs = &step.outputs;
  Status status = step.kernel(step.context);
  if (!status.ok()) {
    for (Tensor& output : step.outputs) output = Tensor();
    return Status(status.code(), node.op + ": " + status.message());
  }
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    if (!step.outputs[i].defined()) {
      for (Tensor& output : step.outputs) output = Tensor();
      return Status(Code::Internal, node.op + ": kernel left output " + std::to_string(i) + " unset");
    }
  }
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    values_[static_cast<size_t>(node.outputs[i])] = std::move(step.outputs[i]);
    step.outputs[i] = Tensor();  // a moved-from tensor keeps its data pointer: clear it
  }
  return Status::success();
}

// After step `index`: what the computed values hold now counts towards the peak; then the
// values whose last reader it was are released (dropping a reference: a view made of one
// keeps its memory alive).
void Program::account_step(size_t index) {
  const Step& step = steps_[index];
  live_.insert(live_.end(), step.writes.begin(), step.writes.end());
  memory_.peak_bytes = std::max(memory_.peak_bytes, live_bytes());
  for (int32_t released : step.releases) {
    values_[static_cast<size_t>(released)] = Tensor();
    auto held = std::find(live_.begin(), live_.end(), released);
    if (held != live_.end()) live_.erase(held);
  }
}

// Bytes held by the live computed values, each byte once (views share their base's memory),
// leaving out memory that belongs to an input or a constant (a reshaped input).
size_t Program::live_bytes() {
  ranges_.clear();
  for (int32_t index : live_) add_range(values_[static_cast<size_t>(index)], ranges_);
  merge_ranges(ranges_);
  size_t total = 0;
  for (const auto& [begin, end] : ranges_) {
    const size_t retained = overlap(begin, end, constant_ranges_) + overlap(begin, end, input_ranges_);
    total += std::max(end - begin, retained) - retained;
  }
  return total;
}

void Program::measure_constants() {
  constant_ranges_.clear();
  for (size_t i = 0; i < values_.size(); ++i) {
    if (graph_.values[i].is_constant) add_range(values_[i], constant_ranges_);
  }
  merge_ranges(constant_ranges_);
}

void Program::discard_computed_values() {
  for (int32_t index : computed_) values_[static_cast<size_t>(index)] = Tensor();
  for (Step& step : steps_) {
    for (Tensor& output : step.outputs) output = Tensor();  // a kernel that threw midway
  }
  live_.clear();
}

std::vector<Program::Output> Program::take_outputs() {
  std::vector<Output> outputs(graph_.outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    Tensor& tensor = outputs[i].tensor;
    tensor = take_output_value(i, outputs);
    const uintptr_t begin = reinterpret_cast<uintptr_t>(tensor.data());
    const uintptr_t end = begin + extent_bytes(tensor);
    if (begin == end) {
      outputs[i].exclusive = true;  // no bytes: nothing to share
    } else if (overlap(begin, end, input_ranges_) > 0) {
      Tensor copy = Tensor::uninitialized(tensor.dtype(), tensor.shape());
      std::memcpy(copy.data(), tensor.data(), tensor.nbytes());  // outputs are contiguous
      tensor = std::move(copy);
      outputs[i].exclusive = true;
    } else {
      outputs[i].exclusive = overlap(begin, end, constant_ranges_) == 0;
    }
  }
  mark_shared_outputs(outputs);
  release_values();
  return outputs;
}

// Output `index`'s tensor: a computed value is moved out (release_values would drop it);
// a constant or an input is shared, and so is a value an earlier output already took.
Tensor Program::take_output_value(size_t index, const std::vector<Output>& outputs) {
  const int32_t value = graph_.outputs[index];
  for (size_t earlier = 0; earlier < index; ++earlier) {
    if (graph_.outputs[earlier] == value) return outputs[earlier].tensor;
  }
  const bool computed = std::find(computed_outputs_.begin(), computed_outputs_.end(), value) != computed_outputs_.end();
  Tensor& held = values_[static_cast<size_t>(value)];
  if (!computed) return held;
  Tensor taken = std::move(held);
  held = Tensor();  // a moved-from tensor keeps its data pointer: clear it
  return taken;
}

// Outputs whose memory overlaps another's (one is a view of the other, or the same value is
// listed twice) are not exclusive.
void Program::mark_shared_outputs(std::vector<Output>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const uintptr_t begin = reinterpret_cast<uintptr_t>(outputs[i].tensor.data());
    const uintptr_t end = begin + extent_bytes(outputs[i].tensor);
    for (size_t j = 0; j < outputs.size() && begin != end; ++j) {
      const uintptr_t other = reinterpret_cast<uintptr_t>(outputs[j].tensor.data());
      const uintptr_t other_end = other + extent_bytes(outputs[j].tensor);
      if (j != i && other < end && begin < other_end) outputs[i].exclusive = false;
    }
  }
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
