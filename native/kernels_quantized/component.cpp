// Marker symbol: proves which shipped library carries the quantized kernels.
#include "edgert/export.h"

extern "C" EDGERT_COMPONENT_API const char* edgert_kernels_quantized_component(void) {
  return "kernels_quantized";
}
