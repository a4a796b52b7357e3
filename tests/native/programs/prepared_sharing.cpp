// Prepared kernel state shared between programs, observed from an operator registered by
// this program: "test::scale" multiplies its input by the sum of its constant input, and its
// prepare function (counted) computes that sum. Programs holding the same constant and
// attributes share one prepared state while one of them lives; another constant, another
// attribute or a state no program holds any more is prepared again. Prints one line per case.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <memory>
#include <vector>

#include "edgert/registry.hpp"
#include "edgert/runtime.hpp"

namespace {

int prepared_count = 0;

edgert::Status prepare_scale(const edgert::PrepareContext& context,
                             std::shared_ptr<const void>& state) {
  ++prepared_count;
  const edgert::Tensor* weights = context.constants.size() > 1 ? context.constants[1] : nullptr;
  if (weights == nullptr) return edgert::Status::success();  // a run-time input: nothing kept
  float total = 0;
  for (int64_t i = 0; i < weights->numel(); ++i) total += weights->data_as<float>()[i];
  state = std::make_shared<const float>(total * static_cast<float>(context.attributes->get_float("gain", 1)));
  return edgert::Status::success();
}

edgert::Status run_scale(edgert::KernelContext& context) {
  if (context.prepared == nullptr) return edgert::Status(edgert::Code::InvalidArgument, "no state");
  const float factor = *static_cast<const float*>(context.prepared);
  const edgert::Tensor& x = *context.inputs[0];
  edgert::Tensor out(edgert::DType::Float32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) out.data_as<float>()[i] = x.data_as<float>()[i] * factor;
  (*context.outputs)[0] = std::move(out);
  return edgert::Status::success();
}

EDGERT_REGISTER_PREPARED_OPERATOR("test::scale", run_scale, prepare_scale);

// Loads a program file and runs it once on ones; returns the program (kept alive by the
// caller) after printing its first output.
std::unique_ptr<edgert::Program> run_file(const char* path) {
  std::unique_ptr<edgert::Program> program;
  edgert::Status status = edgert::Program::load_file(path, program);
  edgert::Tensor x(edgert::DType::Float32, {2});
  x.data_as<float>()[0] = x.data_as<float>()[1] = 1.0f;
  if (status.ok()) status = program->set_input(0, x);
  if (status.ok()) status = program->run();
  if (!status.ok()) {
    std::fprintf(stderr, "%s: %s\n", path, status.message().c_str());
    std::exit(1);
  }
  std::printf("%s %g prepared=%d\n", path, program->output(0).data_as<float>()[0], prepared_count);
  return program;
}

}  // namespace

// Arguments: program files, each with an optional "-" after it that releases every program
// loaded so far once it ran.
int main(int argc, char** argv) {
  std::vector<std::unique_ptr<edgert::Program>> alive;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "-") {
      alive.clear();
      continue;
    }
    alive.push_back(run_file(argv[i]));
  }
  return 0;
}
