// Fuzz target of the program loader: parse_program, Program::load_bytes and
// Program::load_borrowed (constants read in place) must reject any malformed bytes with a
// Status, never crash, hang or allocate out of proportion, and agree on what they accept; a
// program the loader accepts is then run (small zero inputs of its declared shapes) on the
// plain kernels and with the default backends (the CPU delegate, linked into the fuzzer,
// takes linear -> relu chains), which must end in a Status too.
//
// A version-2 program carries a checksum over its bytes, which almost every mutation breaks:
// the target checks that the mutated bytes as given are rejected when their checksum is
// wrong, then fixes the checksum of a copy and feeds that to the loader, so mutations reach
// the parser behind the checksum.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "edgert/runtime.hpp"

extern "C" __attribute__((weak)) void edgert_fuzz_loaded(void);
extern "C" __attribute__((weak)) void edgert_fuzz_delegated(void);

namespace {

constexpr int64_t kMaxInputElements = 256;

// Sets every input to zeros of its declared shape (unknown dimensions become 1); false when
// an input would be larger than kMaxInputElements.
bool set_small_inputs(edgert::Program& program) {
  const edgert::Graph& graph = program.graph();
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const edgert::ValueInfo& info = graph.values[static_cast<size_t>(graph.inputs[i])];
    std::vector<int64_t> shape = info.shape;
    int64_t count = 1;
    for (int64_t& dim : shape) {
      if (dim < 0) dim = 1;
      if (dim > kMaxInputElements || (count *= dim) > kMaxInputElements) return false;
    }
    if (!program.set_input(i, edgert::Tensor(info.dtype, shape)).ok()) return false;
  }
  return true;
}

// `bytes` with a matching checksum when they are a version-2 program's header; true if that
// changed them.
bool seal(std::vector<uint8_t>& bytes) {
  if (bytes.size() < 32 || std::memcmp(bytes.data(), "EDGRTPRG", 8) != 0) return false;
  const uint32_t version =
      uint32_t{bytes[8]} | uint32_t{bytes[9]} << 8 | uint32_t{bytes[10]} << 16 | uint32_t{bytes[11]} << 24;
  if (version != 2) return false;
  const uint32_t checksum = edgert::program_checksum(bytes.data(), bytes.size());
  uint8_t stored[4];
  for (int i = 0; i < 4; ++i) stored[i] = static_cast<uint8_t>(checksum >> (8 * i));
  if (std::memcmp(bytes.data() + 24, stored, 4) == 0) return false;
  std::memcpy(bytes.data() + 24, stored, 4);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* raw, size_t raw_size) {
  std::vector<uint8_t> sealed(raw, raw + raw_size);
  if (seal(sealed)) {
    // The bytes as given have a wrong checksum: the loader must refuse them.
    edgert::Graph unchecked;
    if (edgert::parse_program(raw, raw_size, unchecked).ok()) __builtin_trap();
  }
  const uint8_t* data = sealed.data();
  const size_t size = sealed.size();
  edgert::Graph graph;
  edgert::Status parsed = edgert::parse_program(data, size, graph);
  std::unique_ptr<edgert::Program> program;
  edgert::Status loaded = edgert::Program::load_bytes(data, size, program);
  // A program the loader accepts must also parse, and the other way round unless planning
  // failed (an operator no linked component provides) or a node gives an attribute a value
  // of another kind than its operator declares (registry.hpp), which must then be refused.
  bool kinds_match = true;
  for (size_t i = 0; parsed.ok() && kinds_match && i < graph.nodes.size(); ++i) {
    kinds_match = edgert::check_attribute_kinds(graph.nodes[i], i).ok();
  }
  if (loaded.ok() && !parsed.ok()) __builtin_trap();
  if (loaded.ok() && !kinds_match) __builtin_trap();
  if (parsed.ok() && !loaded.ok() && loaded.code() != edgert::Code::NotFound && kinds_match) __builtin_trap();
  if (edgert_fuzz_loaded != nullptr) edgert_fuzz_loaded();
  if (loaded.ok() && set_small_inputs(*program)) {
    program->set_backends({});  // the plain kernels
    (void)program->run();
  }
  std::unique_ptr<edgert::Program> borrowed;
  const edgert::Status aliased = edgert::Program::load_borrowed(data, size, nullptr, borrowed);
  if (aliased.ok() != loaded.ok()) __builtin_trap();
  if (aliased.ok() && set_small_inputs(*borrowed)) {  // the default backends
    const bool ran = borrowed->run().ok();
    if (ran && borrowed->delegated_nodes("cpu") > 0 && edgert_fuzz_delegated != nullptr) {
      edgert_fuzz_delegated();
    }
    (void)borrowed->take_outputs();
  }
  return 0;
}
