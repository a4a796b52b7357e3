/* Runs an edgert program through the C API; same arguments and output as run_program. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgert/edgert.h"

#define MAX_DIMS 8

/* Element k of input i: the same pattern as run_program.cpp. */
static double pattern(size_t input, int64_t k) {
  return (double)((k * 7 + (int64_t)input * 3) % 17) / 8.0 - 1.0;
}

static void fill_pattern(edgert_dtype dtype, void* data, int64_t count, size_t input) {
  for (int64_t k = 0; k < count; ++k) {
    double value = pattern(input, k);
    switch (dtype) {
      case EDGERT_FLOAT32: ((float*)data)[k] = (float)value; break;
      case EDGERT_INT8: ((int8_t*)data)[k] = (int8_t)(value * 8); break;
      case EDGERT_UINT8: ((uint8_t*)data)[k] = (uint8_t)(value * 8 + 8); break;
      case EDGERT_INT32: ((int32_t*)data)[k] = (int32_t)(value * 8); break;
      case EDGERT_INT64: ((int64_t*)data)[k] = (int64_t)(value * 8); break;
      case EDGERT_BOOL: ((uint8_t*)data)[k] = value > 0; break;
    }
  }
}

static int read_file(const char* path, void* data, size_t nbytes) {
  FILE* file = fopen(path, "rb");
  if (file == NULL) return fprintf(stderr, "error: cannot open %s\n", path), -1;
  size_t got = fread(data, 1, nbytes, file);
  int extra = fgetc(file) != EOF;
  fclose(file);
  if (got != nbytes || extra) return fprintf(stderr, "error: %s does not hold %zu bytes\n", path, nbytes), -1;
  return 0;
}

static int set_input(edgert_program* program, size_t index, const char* path) {
  edgert_dtype dtype;
  int64_t shape[MAX_DIMS];
  size_t ndim = 0;
  if (edgert_program_input_info(program, index, &dtype, shape, MAX_DIMS, &ndim) != EDGERT_OK) return -1;
  int64_t count = 1;
  for (size_t i = 0; i < ndim; ++i) count *= shape[i] = shape[i] < 0 ? 1 : shape[i];
  size_t nbytes = (size_t)count * edgert_dtype_size(dtype);
  void* data = calloc(nbytes ? nbytes : 1, 1);
  int failed = path ? read_file(path, data, nbytes) : (fill_pattern(dtype, data, count, index), 0);
  if (!failed) failed = edgert_program_set_input(program, index, dtype, shape, ndim, data, nbytes) != EDGERT_OK;
  free(data);
  return failed ? -1 : 0;
}

static void print_output(size_t index, edgert_dtype dtype, const int64_t* shape, size_t ndim, const void* data,
                         size_t nbytes) {
  static const char* names[] = {"float32", "int8", "uint8", "int32", "int64", "bool"};
  printf("output %zu %s [", index, names[dtype]);
  for (size_t i = 0; i < ndim; ++i) printf(i ? ",%lld" : "%lld", (long long)shape[i]);
  printf("]\n");
  size_t count = nbytes / edgert_dtype_size(dtype);
  for (size_t k = 0; k < count; ++k) {
    switch (dtype) {
      case EDGERT_FLOAT32: printf("%.9g\n", ((const float*)data)[k]); break;
      case EDGERT_INT8: printf("%d\n", ((const int8_t*)data)[k]); break;
      case EDGERT_UINT8: printf("%u\n", ((const uint8_t*)data)[k]); break;
      case EDGERT_INT32: printf("%d\n", ((const int32_t*)data)[k]); break;
      case EDGERT_INT64: printf("%lld\n", (long long)((const int64_t*)data)[k]); break;
      case EDGERT_BOOL: printf("%u\n", ((const uint8_t*)data)[k]); break;
    }
  }
}

static int write_outputs(edgert_program* program, const char* raw_path) {
  FILE* raw = raw_path ? fopen(raw_path, "wb") : NULL;
  if (raw_path && raw == NULL) return fprintf(stderr, "error: cannot write %s\n", raw_path), -1;
  for (size_t i = 0; i < edgert_program_output_count(program); ++i) {
    edgert_dtype dtype;
    const int64_t* shape;
    size_t ndim, nbytes;
    const void* data;
    if (edgert_program_output(program, i, &dtype, &shape, &ndim, &data, &nbytes) != EDGERT_OK) break;
    print_output(i, dtype, shape, ndim, data, nbytes);
    if (raw) fwrite(data, 1, nbytes, raw);
  }
  if (raw) fclose(raw);
  return 0;
}

int main(int argc, char** argv) {
  const char *program_path = NULL, *raw_path = NULL, *backends = NULL;
  const char* inputs[64];
  size_t input_files = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--output-raw") == 0 && i + 1 < argc)
      raw_path = argv[++i];
    else if (strcmp(argv[i], "--backends") == 0 && i + 1 < argc)
      backends = argv[++i];
    else if (program_path == NULL)
      program_path = argv[i];
    else if (input_files < 64)
      inputs[input_files++] = argv[i];
  }
  if (program_path == NULL) {
    fprintf(stderr, "usage: %s PROGRAM [INPUT.raw ...] [--output-raw FILE] [--backends a,b]\n", argv[0]);
    return 2;
  }
  edgert_program* program = NULL;
  int failed = edgert_program_load_file(program_path, &program) != EDGERT_OK;
  if (!failed && backends) failed = edgert_program_set_backends(program, backends) != EDGERT_OK;
  for (size_t i = 0; !failed && i < edgert_program_input_count(program); ++i) {
    failed = set_input(program, i, i < input_files ? inputs[i] : NULL) != 0;
  }
  if (!failed) failed = edgert_program_run(program) != EDGERT_OK;
  if (!failed) failed = write_outputs(program, raw_path) != 0;
  if (failed && edgert_last_error()[0]) fprintf(stderr, "error: %s\n", edgert_last_error());
  edgert_program_free(program);
  return failed ? 1 : 0;
}
