// Marker symbols: prove which shipped library carries the CPU kernels.
#include "edgert/export.h"
#include "edgert/threadpool.h"
#include "isa.hpp"

extern "C" EDGERT_COMPONENT_API const char* edgert_kernels_component(void) {
  return "kernels";
}

extern "C" EDGERT_COMPONENT_API const void* edgert_kernels_threadpool_instance(void) {
  return edgert_threadpool_instance();
}

// Which code path the kernels of this process run ("portable", "avx2" or "avx512").
extern "C" EDGERT_COMPONENT_API const char* edgert_kernels_isa(void) {
  return edgert::kernels::isa_name(edgert::kernels::kernel_isa());
}
