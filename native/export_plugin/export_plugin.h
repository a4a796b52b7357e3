/* The export plugin's C API: export-time quantized arithmetic, loaded with ctypes by
 * edgert.quantization. Calls return 0 on success or an edgert_status code (edgert.h) with a
 * message for edgert_export_last_error(). The arithmetic is the registered
 * edgert_quantized:: kernels', so export-time results equal run-time results. */
#ifndef EDGERT_EXPORT_PLUGIN_H
#define EDGERT_EXPORT_PLUGIN_H

#include <stdint.h>

#include "edgert/export.h"

#ifdef __cplusplus
extern "C" {
#endif

EDGERT_COMPONENT_API const char* edgert_export_plugin_component(void);
/* The message of the last failed call on this thread ("" when none). */
EDGERT_COMPONENT_API const char* edgert_export_last_error(void);

/* Symmetric per-row int8 quantization of a float32 weight [rows, cols] (row-major):
 * scales[r] = max_k |w[r, k]| / 127 (1 for an all-zero row), zero_points[r] = 0, and
 * q = edgert_quantized::quantize_per_channel(w, scales, zero_points, axis 0). */
EDGERT_COMPONENT_API int edgert_export_quantize_weights_per_channel(const float* weight, int64_t rows, int64_t cols,
                                                                    int8_t* quantized, float* scales,
                                                                    int32_t* zero_points);

/* Reference output of edgert_quantized::linear: input [rows, in_features] float32, weight
 * [out_features, in_features] int8 with per-row scales and zero points, optional bias
 * (null: none); writes output [rows, out_features]. */
EDGERT_COMPONENT_API int edgert_export_quantized_linear(const float* input, int64_t rows, int64_t in_features,
                                                        const int8_t* weight, const float* scales,
                                                        const int32_t* zero_points, const float* bias,
                                                        int64_t out_features, float* output);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
