// Runs an edgert program through the C++ API.
//
//   run_program PROGRAM [INPUT.raw ...] [--output-raw FILE] [--backends a,b]
//
// Each INPUT.raw holds one input's little-endian bytes; inputs without a file get a
// deterministic pattern. Outputs are printed one value per line; --output-raw writes all
// outputs' bytes back to back, for byte comparison with other front ends.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "edgert/runtime.hpp"

namespace {

struct Options {
  std::string program;
  std::vector<std::string> inputs;
  std::string output_raw;
  std::string backends;
  bool has_backends = false;
};

bool parse_options(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--output-raw" || arg == "--backends") && i + 1 < argc) {
      (arg == "--output-raw" ? options.output_raw : options.backends) = argv[++i];
      options.has_backends |= arg == "--backends";
    } else if (options.program.empty()) {
      options.program = arg;
    } else {
      options.inputs.push_back(arg);
    }
  }
  return !options.program.empty();
}

// Element k of input i: the same pattern as run_program_c.c.
double pattern(size_t input, int64_t k) {
  return static_cast<double>((k * 7 + input * 3) % 17) / 8.0 - 1.0;
}

void fill_pattern(edgert::Tensor& tensor, size_t input) {
  for (int64_t k = 0; k < tensor.numel(); ++k) {
    double value = pattern(input, k);
    switch (tensor.dtype()) {
      case edgert::DType::Float32: tensor.data_as<float>()[k] = static_cast<float>(value); break;
      case edgert::DType::Int8: tensor.data_as<int8_t>()[k] = static_cast<int8_t>(value * 8); break;
      case edgert::DType::UInt8: tensor.data_as<uint8_t>()[k] = static_cast<uint8_t>(value * 8 + 8); break;
      case edgert::DType::Int32: tensor.data_as<int32_t>()[k] = static_cast<int32_t>(value * 8); break;
      case edgert::DType::Int64: tensor.data_as<int64_t>()[k] = static_cast<int64_t>(value * 8); break;
      case edgert::DType::Bool: tensor.data_as<uint8_t>()[k] = value > 0; break;
    }
  }
}

edgert::Status make_input(const edgert::Program& program, size_t index, const Options& options,
                          edgert::Tensor& tensor) {
  const edgert::ValueInfo& info = program.graph().values[program.graph().inputs[index]];
  std::vector<int64_t> shape = info.shape;
  for (int64_t& dim : shape) dim = dim < 0 ? 1 : dim;
  tensor = edgert::Tensor(info.dtype, shape);
  if (index >= options.inputs.size()) {
    fill_pattern(tensor, index);
    return edgert::Status::success();
  }
  std::ifstream file(options.inputs[index], std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (!file.good() && !file.eof()) {
    return {edgert::Code::NotFound, "cannot read " + options.inputs[index]};
  }
  if (bytes.size() != tensor.nbytes()) {
    return {edgert::Code::InvalidArgument, options.inputs[index] + " holds " + std::to_string(bytes.size()) +
                                               " bytes, input " + std::to_string(index) + " needs " +
                                               std::to_string(tensor.nbytes())};
  }
  std::memcpy(tensor.data(), bytes.data(), bytes.size());
  return edgert::Status::success();
}

void print_output(size_t index, const edgert::Tensor& tensor) {
  std::printf("output %zu %s [", index, edgert::dtype_name(tensor.dtype()));
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    std::printf(i ? ",%lld" : "%lld", static_cast<long long>(tensor.shape()[i]));
  std::printf("]\n");
  for (int64_t k = 0; k < tensor.numel(); ++k) {
    switch (tensor.dtype()) {
      case edgert::DType::Float32: std::printf("%.9g\n", tensor.data_as<float>()[k]); break;
      case edgert::DType::Int8: std::printf("%d\n", tensor.data_as<int8_t>()[k]); break;
      case edgert::DType::UInt8: std::printf("%u\n", tensor.data_as<uint8_t>()[k]); break;
      case edgert::DType::Int32: std::printf("%d\n", tensor.data_as<int32_t>()[k]); break;
      case edgert::DType::Int64: std::printf("%lld\n", static_cast<long long>(tensor.data_as<int64_t>()[k])); break;
      case edgert::DType::Bool: std::printf("%u\n", tensor.data_as<uint8_t>()[k]); break;
    }
  }
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream stream(text);
  for (std::string name; std::getline(stream, name, ',');) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

edgert::Status run(const Options& options) {
  std::unique_ptr<edgert::Program> program;
  EDGERT_RETURN_IF_ERROR(edgert::Program::load_file(options.program, program));
  if (options.has_backends) EDGERT_RETURN_IF_ERROR(program->set_backends(split(options.backends)));
  for (size_t i = 0; i < program->input_count(); ++i) {
    edgert::Tensor tensor;
    EDGERT_RETURN_IF_ERROR(make_input(*program, i, options, tensor));
    EDGERT_RETURN_IF_ERROR(program->set_input(i, std::move(tensor)));
  }
  EDGERT_RETURN_IF_ERROR(program->run());
  std::ofstream raw;
  if (!options.output_raw.empty()) raw.open(options.output_raw, std::ios::binary);
  for (size_t i = 0; i < program->output_count(); ++i) {
    const edgert::Tensor& output = program->output(i);
    print_output(i, output);
    if (raw.is_open())
      raw.write(static_cast<const char*>(output.data()), static_cast<std::streamsize>(output.nbytes()));
  }
  if (raw.is_open() && !raw.good()) return {edgert::Code::Internal, "cannot write " + options.output_raw};
  return edgert::Status::success();
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!parse_options(argc, argv, options)) {
    std::fprintf(stderr, "usage: %s PROGRAM [INPUT.raw ...] [--output-raw FILE] [--backends a,b]\n", argv[0]);
    return 2;
  }
  edgert::Status status = run(options);
  if (!status.ok()) {
    std::fprintf(stderr, "error (%d): %s\n", static_cast<int>(status.code()), status.message().c_str());
    return 1;
  }
  return 0;
}
