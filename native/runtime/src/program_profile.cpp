// EDGERT_PROFILE (docs/kernels.md, "Where a program's time goes"): with the variable set (to
// anything but "" or "0"), a program times each step of every run after its first, which
// prepares the kernels (packs weights), and when it is destroyed writes to stderr the time per
// run of each operator, summed over its nodes, and the slowest steps with the shapes of their
// first input and output in the last run. Without it, a run pays one branch.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "edgert/runtime.hpp"
#include "shape_text.hpp"

namespace edgert {
namespace {

bool profiling() {
  static const bool on = [] {
    const char* value = std::getenv("EDGERT_PROFILE");
    return value != nullptr && *value != '\0' && std::strcmp(value, "0") != 0;
  }();
  return on;
}

std::string shape_of(const Tensor& tensor) {
  return tensor.defined() ? shape_text(tensor.shape()) : "-";
}

struct Row {
  std::string label;
  size_t nodes = 0;
  double seconds = 0.0;
};

}  // namespace

Status Program::run_steps() {
  const bool timed = profiling() && runs_++ > 0;
  if (timed && step_seconds_.size() != steps_.size()) {
    step_seconds_.assign(steps_.size(), 0.0);  // planned again: counting starts over
    step_shapes_.assign(steps_.size(), std::string());
    profiled_runs_ = 0;
  }
  for (size_t index = 0; index < steps_.size(); ++index) {
    running_step_ = index;
    if (timed) {
      const auto start = std::chrono::steady_clock::now();
      const Status status = run_step(index);
      step_seconds_[index] += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EDGERT_RETURN_IF_ERROR(status);
      const Node& node = graph_.nodes[steps_[index].first + steps_[index].count - 1];
      const Node& first = graph_.nodes[steps_[index].first];
      step_shapes_[index] =
          (first.inputs.empty() || first.inputs[0] < 0 ? std::string("-")
                                                       : shape_of(values_[static_cast<size_t>(first.inputs[0])])) +
          " -> " + (node.outputs.empty() ? std::string("-") : shape_of(values_[static_cast<size_t>(node.outputs[0])]));
    } else {
      EDGERT_RETURN_IF_ERROR(run_step(index));
    }
    account_step(index);
  }
  running_step_ = steps_.size();
  if (timed) ++profiled_runs_;
  return Status::success();
}

Program::~Program() {
  if (profiled_runs_ == 0) return;
  try {
    write_profile();
  } catch (...) {  // a destructor reports nothing it cannot write
  }
}

void Program::write_profile() const {
  const double runs = static_cast<double>(profiled_runs_);
  std::vector<Row> rows;
  std::vector<std::pair<double, size_t>> slowest;  // (seconds, step)
  double total = 0.0;
  for (size_t index = 0; index < steps_.size() && index < step_seconds_.size(); ++index) {
    const Step& step = steps_[index];
    const std::string label =
        step.backend == nullptr ? graph_.nodes[step.first].op : std::string("backend ") + step.backend->name();
    auto found = std::find_if(rows.begin(), rows.end(), [&label](const Row& row) { return row.label == label; });
    if (found == rows.end()) found = rows.insert(rows.end(), Row{label});
    found->nodes += step.count;
    found->seconds += step_seconds_[index];
    total += step_seconds_[index];
    slowest.emplace_back(step_seconds_[index], index);
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.seconds > b.seconds; });
  std::sort(slowest.begin(), slowest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const double share = total > 0.0 ? 100.0 / total : 0.0;
  std::fprintf(stderr, "edgert profile: %zu steps, %.3f ms per run (mean of the %zu runs after the first)\n",
               steps_.size(), 1e3 * total / runs, profiled_runs_);
  std::fprintf(stderr, "  %-28s %7s %12s %7s\n", "operator", "nodes", "ms per run", "share");
  for (const Row& row : rows) {
    std::fprintf(stderr, "  %-28s %7zu %12.4f %6.1f%%\n", row.label.c_str(), row.nodes, 1e3 * row.seconds / runs,
                 row.seconds * share);
  }
  std::fprintf(stderr, "  slowest steps:\n");
  for (size_t i = 0; i < slowest.size() && i < 10; ++i) {
    const Step& step = steps_[slowest[i].second];
    const std::string what = step.backend == nullptr
                                 ? "node " + std::to_string(step.first) + " " + graph_.nodes[step.first].op
                                 : "nodes " + std::to_string(step.first) + ".." +
                                       std::to_string(step.first + step.count - 1) + " backend " + step.backend->name();
    std::fprintf(stderr, "  %12.4f ms  %s %s\n", 1e3 * slowest[i].first / runs, what.c_str(),
                 step_shapes_[slowest[i].second].c_str());
  }
}

}  // namespace edgert
