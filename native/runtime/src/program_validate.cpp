// Structural checks of a parsed graph: every index in range, every value defined before use,
// produced at most once, and never overwriting an input or a constant.
#include <string>
#include <vector>

#include "edgert/runtime.hpp"

namespace edgert {
namespace {

Status invalid(const std::string& what) {
  return Status(Code::InvalidProgram, "invalid program: " + what);
}

bool in_range(int32_t index, const Graph& graph) {
  return index >= 0 && static_cast<size_t>(index) < graph.values.size();
}

Status define_graph_inputs(const Graph& graph, std::vector<bool>& defined) {
  for (int32_t index : graph.inputs) {
    if (!in_range(index, graph)) return invalid("graph input index " + std::to_string(index) + " out of range");
    if (graph.values[index].is_constant || defined[index]) {
      return invalid("graph input " + std::to_string(index) + " is a constant or listed twice");
    }
    defined[index] = true;
  }
  return Status::success();
}

Status check_node(const Graph& graph, size_t position, std::vector<bool>& defined) {
  const Node& node = graph.nodes[position];
  const std::string where = "node " + std::to_string(position) + " (" + node.op + ")";
  for (int32_t index : node.inputs) {
    if (index == -1) continue;
    if (!in_range(index, graph)) return invalid(where + ": input index " + std::to_string(index) + " out of range");
    if (!defined[index]) return invalid(where + ": input " + std::to_string(index) + " is used before it is defined");
  }
  for (int32_t index : node.outputs) {
    if (!in_range(index, graph)) return invalid(where + ": output index " + std::to_string(index) + " out of range");
    if (defined[index]) return invalid(where + ": output " + std::to_string(index) + " is already defined");
    defined[index] = true;
  }
  return Status::success();
}

}  // namespace

Status validate_graph(const Graph& graph) {
  std::vector<bool> defined(graph.values.size(), false);
  for (size_t i = 0; i < graph.values.size(); ++i) defined[i] = graph.values[i].is_constant;
  EDGERT_RETURN_IF_ERROR(define_graph_inputs(graph, defined));
  for (size_t i = 0; i < graph.nodes.size(); ++i) EDGERT_RETURN_IF_ERROR(check_node(graph, i, defined));
  for (int32_t index : graph.outputs) {
    if (!in_range(index, graph) || !defined[index]) {
      return invalid("graph output " + std::to_string(index) + " is out of range or never defined");
    }
  }
  return Status::success();
}

}  // namespace edgert
