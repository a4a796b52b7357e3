// Fuzz target of the program loader: parse_program and Program::load_bytes must reject any
// malformed bytes with a Status, never crash, hang or allocate out of proportion.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "edgert/runtime.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  edgert::Graph graph;
  edgert::Status parsed = edgert::parse_program(data, size, graph);
  std::unique_ptr<edgert::Program> program;
  edgert::Status loaded = edgert::Program::load_bytes(data, size, program);
  // A program the loader accepts must also parse, and the other way round unless planning
  // failed (an operator no linked component provides).
  if (loaded.ok() && !parsed.ok()) __builtin_trap();
  if (parsed.ok() && !loaded.ok() && loaded.code() != edgert::Code::NotFound) __builtin_trap();
  return 0;
}
