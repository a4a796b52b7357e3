// The in-memory form of a loaded program: values, nodes and attributes.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "edgert/export.h"
#include "edgert/status.hpp"
#include "edgert/tensor.hpp"

namespace edgert {

using AttributeValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

class EDGERT_API Attributes {
 public:
  void set(const std::string& name, AttributeValue value) { values_[name] = std::move(value); }
  bool has(const std::string& name) const { return values_.count(name) != 0; }
  int64_t get_int(const std::string& name, int64_t fallback) const;
  double get_float(const std::string& name, double fallback) const;
  std::string get_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> get_ints(const std::string& name) const;  // empty when absent
  std::vector<double> get_floats(const std::string& name) const;
  const std::map<std::string, AttributeValue>& all() const { return values_; }

 private:
  std::map<std::string, AttributeValue> values_;
};

// A value slot of the graph: an input, a constant, an intermediate or an output.
struct ValueInfo {
  DType dtype = DType::Float32;
  std::vector<int64_t> shape;  // declared shape; -1 marks a dimension known only at run time
  bool is_constant = false;
  Tensor constant;  // the data when is_constant
};

struct Node {
  std::string op;                // namespaced operator name, e.g. "edgert::linear"
  std::vector<int32_t> inputs;   // value indices; -1 marks an absent optional input
  std::vector<int32_t> outputs;  // value indices
  Attributes attributes;
};

struct Graph {
  std::vector<ValueInfo> values;
  std::vector<Node> nodes;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  // Per value: how many node inputs read it, plus one per listing as a graph output.
  // Filled by the loader (count_readers) so delegates plan in linear time.
  std::vector<uint32_t> readers;
  // The program format version the loader read it from (1 or 2); 0 for a graph built by hand.
  uint32_t format_version = 0;
};

// Fills graph.readers in one pass over the nodes.
inline void count_readers(Graph& graph) {
  graph.readers.assign(graph.values.size(), 0);
  auto count = [&graph](int32_t id) {
    if (id >= 0 && static_cast<size_t>(id) < graph.readers.size()) ++graph.readers[static_cast<size_t>(id)];
  };
  for (const Node& node : graph.nodes) {
    for (int32_t input : node.inputs) count(input);
  }
  for (int32_t output : graph.outputs) count(output);
}

// How many times value `id` is read (node inputs plus graph-output listings).
inline size_t reader_count(const Graph& graph, int32_t id) {
  if (id < 0) return 0;
  if (graph.readers.size() == graph.values.size()) {
    return static_cast<size_t>(id) < graph.readers.size() ? graph.readers[static_cast<size_t>(id)] : 0;
  }
  size_t total = 0;  // a graph built by hand, without count_readers: count now
  for (const Node& node : graph.nodes) {
    for (int32_t input : node.inputs) total += input == id;
  }
  for (int32_t output : graph.outputs) total += output == id;
  return total;
}

}  // namespace edgert
