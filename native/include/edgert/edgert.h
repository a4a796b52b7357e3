/* edgert C API: load a program, bind inputs, run, read outputs, list operators.
 * Plain C with opaque handles and fixed-width types, usable from C and from any compiler ABI.
 * Every call returning edgert_status leaves a message for edgert_last_error() on failure. */
#ifndef EDGERT_H
#define EDGERT_H

#include <stddef.h>
#include <stdint.h>

#include "edgert/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum edgert_status {
  EDGERT_OK = 0,
  EDGERT_ERROR_INVALID_PROGRAM = 1,  /* malformed or inconsistent program bytes */
  EDGERT_ERROR_INVALID_ARGUMENT = 2, /* wrong index, dtype, shape or size from the caller */
  EDGERT_ERROR_NOT_FOUND = 3,        /* unknown operator or backend, missing file */
  EDGERT_ERROR_UNSUPPORTED = 4,
  EDGERT_ERROR_INTERNAL = 5,
  EDGERT_ERROR_UNAVAILABLE = 6,      /* a backend cannot run here (no GPU, no driver) */
  EDGERT_ERROR_OUT_OF_MEMORY = 7
} edgert_status;

typedef enum edgert_dtype {
  EDGERT_FLOAT32 = 0,
  EDGERT_INT8 = 1,
  EDGERT_UINT8 = 2,
  EDGERT_INT32 = 3,
  EDGERT_INT64 = 4,
  EDGERT_BOOL = 5 /* one byte per element: 0 or 1 */
} edgert_dtype;

typedef struct edgert_program edgert_program;

/* Safety contract. No call lets an exception or a crash reach the caller: allocation
 * failures are EDGERT_ERROR_OUT_OF_MEMORY, sizes whose element count or byte size would
 * overflow (or exceed 2^48 bytes) are EDGERT_ERROR_INVALID_ARGUMENT at set_input and an
 * error from the node at run, never a wrap. Inputs have at most EDGERT_MAX_DIMS dimensions.
 * Threads: the registries and the thread pool may be used from any thread. Each call on one
 * program holds that program's lock, so calls from several threads take turns; a sequence
 * (set_input, run, output) is one unit only under the caller's own lock, so share a program
 * between threads with a lock around the sequence (as the Python package does) or give
 * each thread its own program. */
#define EDGERT_MAX_DIMS 32

EDGERT_API const char* edgert_version(void);
/* The message of the last failed call on this thread ("" when none). */
EDGERT_API const char* edgert_last_error(void);
EDGERT_API size_t edgert_dtype_size(edgert_dtype dtype);

EDGERT_API edgert_status edgert_program_load_file(const char* path, edgert_program** program);
EDGERT_API edgert_status edgert_program_load_bytes(const void* data, size_t size,
                                                   edgert_program** program);
EDGERT_API void edgert_program_free(edgert_program* program);

/* Comma-separated backend names tried in order before the plain kernels ("" uses none);
 * by default every registered backend that reports itself available is tried. Takes effect
 * on the next run. An unknown name is EDGERT_ERROR_NOT_FOUND. */
EDGERT_API edgert_status edgert_program_set_backends(edgert_program* program, const char* names);
/* Number of nodes the named backend ran in the last run (0 when none). */
EDGERT_API size_t edgert_program_delegated_nodes(const edgert_program* program,
                                                 const char* backend);

EDGERT_API size_t edgert_program_input_count(const edgert_program* program);
EDGERT_API size_t edgert_program_output_count(const edgert_program* program);
/* Declared dtype and shape of an input; *ndim is set, shape receives min(*ndim, capacity)
 * entries (-1 for a dimension known only at run time). */
EDGERT_API edgert_status edgert_program_input_info(const edgert_program* program, size_t index,
                                                   edgert_dtype* dtype, int64_t* shape,
                                                   size_t capacity, size_t* ndim);

/* Copies a contiguous, row-major input. */
EDGERT_API edgert_status edgert_program_set_input(edgert_program* program, size_t index,
                                                  edgert_dtype dtype, const int64_t* shape,
                                                  size_t ndim, const void* data, size_t nbytes);
EDGERT_API edgert_status edgert_program_run(edgert_program* program);
/* Borrowed views of an output, valid until the next set_input, run or free of the program.
 * Data is contiguous. After a failed run no output is available (the error says so). */
EDGERT_API edgert_status edgert_program_output(const edgert_program* program, size_t index,
                                               edgert_dtype* dtype, const int64_t** shape,
                                               size_t* ndim, const void** data, size_t* nbytes);

/* The registries, sorted by name; owner is the path of the registering library or "". */
EDGERT_API size_t edgert_operator_count(void);
EDGERT_API const char* edgert_operator_name(size_t index);
EDGERT_API const char* edgert_operator_owner(size_t index);
EDGERT_API size_t edgert_backend_count(void);
EDGERT_API const char* edgert_backend_name(size_t index);
EDGERT_API const char* edgert_backend_owner(size_t index);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif
