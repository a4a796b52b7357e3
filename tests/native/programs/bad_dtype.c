/* Dtype codes no edgert_dtype names, passed through every C API call that takes one: each is
 * refused with EDGERT_ERROR_INVALID_ARGUMENT and a message naming the code, and (built with
 * -fsanitize=undefined against a sanitized libedgert) no call loads the out-of-range value
 * as the enum type. Prints "N failures".
 *
 *   bad_dtype PROGRAM   (a program whose first input is float32 [1, 16] or [-1, 16]) */
#include <stdio.h>
#include <string.h>

#include "edgert/edgert.h"

static int failures = 0;

static void expect_refused(const char* call, edgert_status status, const char* message) {
  if (status != EDGERT_ERROR_INVALID_ARGUMENT || strstr(edgert_last_error(), message) == NULL) {
    fprintf(stderr, "%s: status %d, message '%s' (expected 2 and '%s')\n", call, (int)status,
            edgert_last_error(), message);
    ++failures;
  }
}

static void try_code(edgert_program* program, edgert_dtype code, const char* message) {
  float data[16] = {0};
  int64_t shape[2] = {1, 16};
  if (edgert_dtype_size(code) != 0) {
    fprintf(stderr, "edgert_dtype_size: a size for %s\n", message);
    ++failures;
  }
  expect_refused("edgert_program_set_input",
                 edgert_program_set_input(program, 0, code, shape, 2, data, sizeof data), message);
  edgert_tensor_view input = {code, 2, shape, data, sizeof data};
  edgert_tensor* output = NULL;
  expect_refused("edgert_program_run_with",
                 edgert_program_run_with(program, &input, 1, &output, 1), message);
  if (output != NULL) {
    fprintf(stderr, "edgert_program_run_with: an output after a refused input\n");
    ++failures;
  }
}

int main(int argc, char** argv) {
  edgert_program* program = NULL;
  if (argc != 2 || edgert_program_load_file(argv[1], &program) != EDGERT_OK) {
    fprintf(stderr, "usage: bad_dtype PROGRAM (%s)\n", edgert_last_error());
    return 2;
  }
  try_code(program, (edgert_dtype)42, "unknown dtype code 42");
  try_code(program, (edgert_dtype)-1, "unknown dtype code 4294967295");
  try_code(program, (edgert_dtype)(EDGERT_BOOL + 1), "unknown dtype code 6");
  edgert_program_free(program);
  printf("%d failures\n", failures);
  return failures == 0 ? 0 : 1;
}
