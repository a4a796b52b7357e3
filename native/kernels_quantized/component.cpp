// Marker symbols: prove which shipped library carries the quantized kernels, and say which
// code path its integer kernels run.
#include "../kernels/isa.hpp"
#include "edgert/export.h"

extern "C" EDGERT_COMPONENT_API const char* edgert_kernels_quantized_component(void) {
  return "kernels_quantized";
}

// The integer kernels' level in this process: "portable", "avx2", "avx512", "avx512vnni" or
// "dotprod" (isa.hpp).
extern "C" EDGERT_COMPONENT_API const char* edgert_kernels_quantized_isa(void) {
  return edgert::kernels::integer_isa_name(edgert::kernels::integer_kernel_isa());
}
