// The "cpu" delegate: claims chains edgert::linear → edgert::relu (→ linear → relu …) whose
// intermediate values nothing else reads, and runs each pair in one pass with the bias and
// the relu applied as each output block is finished. The fusion is decided once, when the
// program is prepared (on its first run), and constant weights are packed then: each run
// walks a list of fused pairs, not the graph. It uses the linear kernel's own arithmetic
// (edgert::kernels::linear), so results are bit-identical to the unfused kernels.
#include <memory>
#include <string>
#include <vector>

#include "edgert/registry.hpp"
#include "edgert/threadpool.h"
#include "linear.hpp"

namespace {

using edgert::Graph;
using edgert::Node;

// How many nodes read value `id`, plus one when it is a graph output (counted once at load:
// planning stays linear in the graph).
size_t readers(const Graph& graph, int32_t id) {
  return edgert::reader_count(graph, id);
}

bool is_float(const Graph& graph, int32_t id) {
  return id >= 0 && static_cast<size_t>(id) < graph.values.size() &&
         graph.values[static_cast<size_t>(id)].dtype == edgert::DType::Float32;
}

// A linear node at `index` followed by a relu that reads only its output, which nothing
// else reads.
bool is_fusable_pair(const Graph& graph, size_t index) {
  if (index + 1 >= graph.nodes.size()) return false;
  const Node& linear = graph.nodes[index];
  const Node& relu = graph.nodes[index + 1];
  if (linear.op != "edgert::linear" || relu.op != "edgert::relu") return false;
  if (linear.attributes.get_string("activation", "none") != "none") return false;  // one of its own
  if (linear.inputs.size() < 2 || linear.inputs.size() > 3 || linear.outputs.size() != 1) return false;
  if (relu.inputs.size() != 1 || relu.outputs.size() != 1) return false;
  for (int32_t input : linear.inputs) {
    if (input != -1 && !is_float(graph, input)) return false;
  }
  if (linear.inputs[0] < 0 || linear.inputs[1] < 0) return false;
  const int32_t hidden = linear.outputs[0];
  return relu.inputs[0] == hidden && readers(graph, hidden) == 1 && is_float(graph, relu.outputs[0]);
}

class CpuBackend final : public edgert::Backend {
 public:
  const char* name() const override { return "cpu"; }

  size_t claim(const Graph& graph, size_t first) const override {
    size_t count = 0;
    while (is_fusable_pair(graph, first + count)) {
      count += 2;
      // Continue only when the next linear reads this relu's output and nothing else does.
      const int32_t output = graph.nodes[first + count - 1].outputs[0];
      if (!is_fusable_pair(graph, first + count) || graph.nodes[first + count].inputs[0] != output ||
          readers(graph, output) != 1) {
        break;
      }
    }
    return count;
  }

  edgert::Status prepare(const Graph& graph, size_t first, size_t count,
                         std::unique_ptr<edgert::Prepared>& prepared) override {
    prepared = fused_chain(graph, first, count, true);
    return edgert::Status::success();
  }

  // A single run packs nothing: packing a weight costs as much memory traffic as the product
  // it would serve once.
  edgert::Status run(const Graph& graph, size_t first, size_t count, std::vector<edgert::Tensor>& values) override {
    return fused_chain(graph, first, count, false)->run(values);
  }

 private:
  // One linear → relu pair: the value ids it reads and writes, decided at prepare time.
  struct Pair {
    size_t node;
    size_t input;
    size_t weight;
    int32_t bias;  // -1: none
    size_t output;
    std::shared_ptr<const edgert::kernels::PackedPanels> packed_weight;  // null: run-time weight
  };

  struct FusedChain final : public edgert::Prepared {
    std::vector<Pair> pairs;

    edgert::Status run(std::vector<edgert::Tensor>& values) override {
      for (const Pair& pair : pairs) {
        const edgert::Status status = edgert::kernels::linear(
            values[pair.input], values[pair.weight], pair.bias >= 0 ? &values[static_cast<size_t>(pair.bias)] : nullptr,
            edgert::kernels::Activation::Relu, values[pair.output], pair.packed_weight.get());
        if (!status.ok()) {
          return edgert::Status(status.code(), "edgert::linear (node " + std::to_string(pair.node) +
                                                   ", fused with edgert::relu): " + status.message());
        }
      }
      return edgert::Status::success();
    }
  };

  // The pairs of nodes [first, first + count); with pack_weights, each constant weight is
  // packed once into the panels the product reads.
  static std::unique_ptr<FusedChain> fused_chain(const Graph& graph, size_t first, size_t count, bool pack_weights) {
    auto fused = std::make_unique<FusedChain>();
    for (size_t index = first; index + 1 < first + count; index += 2) {
      const Node& linear = graph.nodes[index];
      const Node& relu = graph.nodes[index + 1];
      const auto weight = static_cast<size_t>(linear.inputs[1]);
      std::shared_ptr<const edgert::kernels::PackedPanels> packed;
      if (pack_weights && graph.values[weight].is_constant) {
        packed = edgert::kernels::prepare_linear_weight(graph.values[weight].constant);
      }
      fused->pairs.push_back({index, static_cast<size_t>(linear.inputs[0]), weight,
                              linear.inputs.size() > 2 ? linear.inputs[2] : -1, static_cast<size_t>(relu.outputs[0]),
                              std::move(packed)});
    }
    return fused;
  }
};

CpuBackend cpu_backend;

}  // namespace

EDGERT_REGISTER_BACKEND("cpu", cpu_backend);

extern "C" EDGERT_COMPONENT_API const char* edgert_backend_cpu_component(void) {
  return "backend_cpu";
}

extern "C" EDGERT_COMPONENT_API const void* edgert_backend_cpu_threadpool_instance(void) {
  return edgert_threadpool_instance();
}
