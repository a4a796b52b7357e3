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
  EDGERT_ERROR_UNAVAILABLE = 6, /* a backend cannot run here (no GPU, no driver) */
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
 * program holds that program's lock, so calls from several threads take turns.
 * edgert_program_run_with is one call for the whole sequence (bind, run, read), so threads
 * may share a program through it without a lock of their own (the Python package does); the
 * separate calls (set_input, run, output) are one unit only under the caller's own lock.
 * Fork: a child process forked while another thread held a program's lock gets it unlocked
 * (POSIX); a run that thread had in progress is abandoned, the child's next run starts
 * afresh. */
#define EDGERT_MAX_DIMS 32

EDGERT_API const char* edgert_version(void);
/* The message of the last failed call on this thread ("" when none). */
EDGERT_API const char* edgert_last_error(void);
/* A note of the last successful edgert_program_load_* on this thread that is not an error
 * ("" when none; each load call clears it). Today: a program of format version 1, which
 * carries no checksum, so corruption of its bytes cannot be detected (save it again with the
 * current writer to get version 2; docs/program-format.md). */
EDGERT_API const char* edgert_last_warning(void);
EDGERT_API size_t edgert_dtype_size(edgert_dtype dtype);

/* Maps the file (path in UTF-8) read-only, private: constants are read in place from the
 * mapping, which stays until the program is freed. Files under 1 MiB, and files that cannot
 * be mapped (pipes), are read into memory instead. While a program maps it, replace the file
 * by renaming a new one over it, never by truncating or rewriting it in place: pages of a
 * truncated mapped file cannot be read (SIGBUS), docs/program-format.md "Loading". */
EDGERT_API edgert_status edgert_program_load_file(const char* path, edgert_program** program);
/* Copies the bytes once; the caller may free them when the call returns. */
EDGERT_API edgert_status edgert_program_load_bytes(const void* data, size_t size, edgert_program** program);
/* Reads the constants in place from the caller's bytes, which must stay valid and unchanged
 * until release(context) is called: once, from whichever thread drops the last constant (at
 * the latest in edgert_program_free), and also when loading fails (then before this call
 * returns). With release NULL the caller keeps the bytes valid until edgert_program_free
 * returns. Bytes not aligned to 16 are copied (and release is called before returning). */
EDGERT_API edgert_status edgert_program_load_borrowed(const void* data, size_t size, void (*release)(void* context),
                                                      void* context, edgert_program** program);
EDGERT_API void edgert_program_free(edgert_program* program);
/* The program format version the program was read from (1: no checksum, 2: checksummed); 0
 * for a null program. */
EDGERT_API uint32_t edgert_program_format_version(const edgert_program* program);

/* Comma-separated backend names tried in order before the plain kernels ("" uses none);
 * by default every registered backend that reports itself available is tried. Takes effect
 * on the next run. An unknown name is EDGERT_ERROR_NOT_FOUND. */
EDGERT_API edgert_status edgert_program_set_backends(edgert_program* program, const char* names);
/* Number of nodes the named backend ran in the last run (0 when none). */
EDGERT_API size_t edgert_program_delegated_nodes(const edgert_program* program, const char* backend);

EDGERT_API size_t edgert_program_input_count(const edgert_program* program);
EDGERT_API size_t edgert_program_output_count(const edgert_program* program);
/* Declared dtype and shape of an input; *ndim is set, shape receives min(*ndim, capacity)
 * entries (-1 for a dimension known only at run time). */
EDGERT_API edgert_status edgert_program_input_info(const edgert_program* program, size_t index, edgert_dtype* dtype,
                                                   int64_t* shape, size_t capacity, size_t* ndim);

/* Copies a contiguous, row-major input. */
EDGERT_API edgert_status edgert_program_set_input(edgert_program* program, size_t index, edgert_dtype dtype,
                                                  const int64_t* shape, size_t ndim, const void* data, size_t nbytes);
EDGERT_API edgert_status edgert_program_run(edgert_program* program);
/* A tensor's description: contiguous, row-major, little-endian data. */
typedef struct edgert_tensor_view {
  edgert_dtype dtype;
  size_t ndim;
  const int64_t* shape;
  const void* data;
  size_t nbytes;
} edgert_tensor_view;

/* An output kept past the run that made it: it owns (or shares) the output's memory. */
typedef struct edgert_tensor edgert_tensor;

/* One unit under the program's lock: binds `input_count` inputs (one per program input, read
 * in place, never copied: they must stay valid and unchanged during the call), runs, and
 * stores one new edgert_tensor per output into outputs[0 .. output count) (the caller frees
 * each with edgert_tensor_free; output_capacity must be at least the output count). The
 * program keeps nothing of the call: an output that would share memory with an input is
 * copied, and edgert_program_output reports no output afterwards. On failure no tensor is
 * made (every outputs[i] is NULL). */
EDGERT_API edgert_status edgert_program_run_with(edgert_program* program, const edgert_tensor_view* inputs,
                                                 size_t input_count, edgert_tensor** outputs, size_t output_capacity);

/* The memory limit: the most bytes of tensor memory a run of the program may hold at once
 * (0: none). A program starts with the limit EDGERT_MEMORY_LIMIT gave when it was loaded
 * (bytes, or with the suffix K, M, G or T; unset: none). An allocation that would take a run
 * past it is refused before it is made: the run fails with EDGERT_ERROR_OUT_OF_MEMORY and
 * edgert_last_error() gives the bytes it needed and the limit (docs/operators.md, "Memory
 * limit"). */
EDGERT_API edgert_status edgert_program_set_memory_limit(edgert_program* program, uint64_t bytes);
EDGERT_API uint64_t edgert_program_memory_limit(const edgert_program* program);
/* edgert_program_run_with under `memory_limit` bytes (0: none) for this call only; the
 * program's own limit is left as it was. */
EDGERT_API edgert_status edgert_program_run_with_limit(edgert_program* program, const edgert_tensor_view* inputs,
                                                       size_t input_count, edgert_tensor** outputs,
                                                       size_t output_capacity, uint64_t memory_limit);
/* Describes a kept output: its view is valid until edgert_tensor_free. *exclusive is 1 when
 * nothing else (no other output, input or constant) shares its memory, so the holder may
 * write it; 0 when it must be treated as read-only (an output that is a constant, or a view
 * of another output). */
EDGERT_API edgert_status edgert_tensor_info(const edgert_tensor* tensor, edgert_tensor_view* view, int* exclusive);
/* Any thread; NULL is ignored. */
EDGERT_API void edgert_tensor_free(edgert_tensor* tensor);

/* Where a program's constants live. */
typedef enum edgert_constant_storage {
  EDGERT_CONSTANTS_COPIED = 0,  /* one copy owned by the program */
  EDGERT_CONSTANTS_MAPPED = 1,  /* read in place from a mapping of the file */
  EDGERT_CONSTANTS_BORROWED = 2 /* read in place from the caller's bytes */
} edgert_constant_storage;

/* What the executor's memory plan did in the last run (docs/operators.md, "Memory"). */
typedef struct edgert_memory_plan {
  uint64_t peak_bytes;      /* most bytes the run's computed values held at once */
  uint64_t input_bytes;     /* bytes of the inputs it read */
  uint64_t output_bytes;    /* bytes of its outputs */
  uint64_t constant_bytes;  /* bytes of the program's constants */
  uint64_t released_values; /* values each run releases once their last reader has run */
  uint32_t constants;       /* an edgert_constant_storage */
} edgert_memory_plan;

EDGERT_API edgert_status edgert_program_memory_plan(const edgert_program* program, edgert_memory_plan* plan);

/* Borrowed views of an output, valid until the next set_input, run, run_with or free of the
 * program. Data is contiguous. After a failed run no output is available (the error says
 * so). */
EDGERT_API edgert_status edgert_program_output(const edgert_program* program, size_t index, edgert_dtype* dtype,
                                               const int64_t** shape, size_t* ndim, const void** data, size_t* nbytes);

/* The registries, sorted by name; owner is the path of the registering library or "".
 * edgert_backend_* lists every backend installed and loaded (registered), whether or not it
 * can run on this machine: a CUDA build's "cuda" is listed without a GPU. */
EDGERT_API size_t edgert_operator_count(void);
EDGERT_API const char* edgert_operator_name(size_t index);
EDGERT_API const char* edgert_operator_owner(size_t index);
/* The attributes operator `index` reads and their kinds, as "name:kind" pairs joined by commas
 * ("axis:int,eps:float"; kinds: int, float, string, ints, floats); "" when it reads none;
 * NULL when it declared nothing (an operator of another library) or `index` is past the end.
 * Loading a program refuses a node giving a declared attribute a value of another kind. */
EDGERT_API const char* edgert_operator_attributes(size_t index);
EDGERT_API size_t edgert_backend_count(void);
EDGERT_API const char* edgert_backend_name(size_t index);
EDGERT_API const char* edgert_backend_owner(size_t index);

/* The backends that can run here: the registered ones whose device and driver are present
 * (probed on first use; "cpu" always), sorted by name. Index past the end: NULL. */
EDGERT_API size_t edgert_available_backend_count(void);
EDGERT_API const char* edgert_available_backend_name(size_t index);
/* EDGERT_OK when the backend `name` can run here; EDGERT_ERROR_UNAVAILABLE when it is
 * registered but cannot (no GPU, no driver: edgert_last_error() says why);
 * EDGERT_ERROR_NOT_FOUND when no loaded library registers it (for "cuda" on the CPU build the
 * message says so and which distribution to install). */
EDGERT_API edgert_status edgert_backend_available(const char* name);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif
