// A delegate's per-program lifecycle, observed from a backend registered by this program:
// "counting" takes over every edgert::softmax node. It must be prepared once per plan (on the
// first run after planning), run once per Program::run through what it prepared, and released
// with the program (or when the program is planned again). Prints "prepared=N runs=N released=N" after each phase.
#include <cstdio>
#include <memory>
#include <vector>

#include "edgert/registry.hpp"
#include "edgert/runtime.hpp"

namespace {

int prepared_count = 0, run_count = 0, released_count = 0;

class Softmaxes final : public edgert::Prepared {
 public:
  Softmaxes(const edgert::Graph& graph, size_t first, size_t count)
      : graph_(graph), first_(first), count_(count) {}
  ~Softmaxes() override { ++released_count; }

  edgert::Status run(std::vector<edgert::Tensor>& values) override {
    ++run_count;
    edgert::KernelFn kernel = edgert::find_operator("edgert::softmax");
    for (size_t i = first_; i < first_ + count_; ++i) {
      const edgert::Node& node = graph_.nodes[i];
      edgert::KernelContext context;
      context.op = node.op.c_str();
      context.attributes = &node.attributes;
      for (int32_t index : node.inputs) context.inputs.push_back(&values[static_cast<size_t>(index)]);
      std::vector<edgert::Tensor> outputs(node.outputs.size());
      context.outputs = &outputs;
      EDGERT_RETURN_IF_ERROR(kernel(context));
      values[static_cast<size_t>(node.outputs[0])] = std::move(outputs[0]);
    }
    return edgert::Status::success();
  }

 private:
  const edgert::Graph& graph_;
  size_t first_, count_;
};

class Counting final : public edgert::Backend {
 public:
  const char* name() const override { return "counting"; }
  size_t claim(const edgert::Graph& graph, size_t first) const override {
    return graph.nodes[first].op == "edgert::softmax" ? 1 : 0;
  }
  edgert::Status prepare(const edgert::Graph& graph, size_t first, size_t count,
                         std::unique_ptr<edgert::Prepared>& prepared) override {
    ++prepared_count;
    prepared = std::make_unique<Softmaxes>(graph, first, count);
    return edgert::Status::success();
  }
  edgert::Status run(const edgert::Graph&, size_t, size_t, std::vector<edgert::Tensor>&) override {
    return edgert::Status(edgert::Code::Internal, "run without prepare");
  }
};

Counting counting;
const bool registered = edgert::register_backend(&counting);

void report(const char* phase) {
  std::printf("%s prepared=%d runs=%d released=%d\n", phase, prepared_count, run_count,
              released_count);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 || !registered) return 2;
  std::unique_ptr<edgert::Program> program;
  edgert::Status status = edgert::Program::load_file(argv[1], program);
  if (status.ok()) status = program->set_backends({"counting"});
  for (int round = 0; status.ok() && round < 3; ++round) {
    const edgert::ValueInfo& info = program->graph().values[program->graph().inputs[0]];
    std::vector<int64_t> shape = info.shape;
    for (int64_t& dim : shape) dim = dim < 0 ? 1 : dim;
    edgert::Tensor input(info.dtype, shape);
    for (int64_t k = 0; k < input.numel(); ++k) input.data_as<float>()[k] = 0.25f * float(k % 7);
    status = program->set_input(0, std::move(input));
    if (status.ok()) status = program->run();
  }
  report("three-runs");
  if (status.ok()) status = program->set_backends({"counting"});  // planned again
  if (status.ok()) status = program->run();
  report("replanned");
  program.reset();
  report("released");
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  return 0;
}
