// edgert C++ API. Consumers link edgert::runtime plus the kernel components they need.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgert/export.h"
#include "edgert/graph.hpp"
#include "edgert/registry.hpp"
#include "edgert/status.hpp"
#include "edgert/tensor.hpp"

namespace edgert {

EDGERT_API const char* version();

// Parses the binary program format (docs/program-format.md). Never trusts the bytes: every
// size, index, dtype and shape is checked before use, and allocations are bounded by the
// input size.
EDGERT_API Status parse_program(const void* data, size_t size, Graph& graph);

class EDGERT_API Program {
 public:
  // Loading and running never throw for bad input: sizes that overflow are InvalidProgram
  // (load) or InvalidArgument (run), allocation failures OutOfMemory.
  static Status load_file(const std::string& path, std::unique_ptr<Program>& program);
  static Status load_bytes(const void* data, size_t size, std::unique_ptr<Program>& program);

  const Graph& graph() const { return graph_; }
  size_t input_count() const { return graph_.inputs.size(); }
  size_t output_count() const { return graph_.outputs.size(); }

  // Backend names tried in order; an empty list runs only the plain kernels.
  Status set_backends(const std::vector<std::string>& names);
  void use_default_backends();

  Status set_input(size_t index, Tensor tensor);
  Status run();
  const Tensor& output(size_t index) const;
  size_t delegated_nodes(const std::string& backend) const;

 private:
  Program() = default;
  static Status load_checked(const void* data, size_t size, std::unique_ptr<Program>& program);
  Status run_checked();
  Status plan();

  struct Step {
    Backend* backend = nullptr;  // null: run node `first` with its kernel
    size_t first = 0;
    size_t count = 1;
    KernelFn kernel = nullptr;
    PrepareFn prepare_kernel = nullptr;         // the kernel's prepare function, or null
    bool kernel_prepared = false;               // prepare_kernel ran (on the first run)
    std::shared_ptr<const void> kernel_state;   // what it made (may be null)
    std::shared_ptr<Prepared> prepared;  // the backend's state for these nodes
  };

  Graph graph_;
  std::vector<Tensor> values_;
  std::vector<Step> steps_;
  std::vector<std::string> backend_names_;
  bool default_backends_ = true;
  bool planned_ = false;
  std::vector<std::pair<std::string, size_t>> delegated_;
};

}  // namespace edgert
