// Marker symbols: prove which shipped library carries the CPU kernels.
#include "edgert/export.h"
#include "edgert/threadpool.h"

extern "C" EDGERT_COMPONENT_API const char* edgert_kernels_component(void) { return "kernels"; }

extern "C" EDGERT_COMPONENT_API const void* edgert_kernels_threadpool_instance(void) {
  return edgert_threadpool_instance();
}
