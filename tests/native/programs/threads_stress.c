/* ThreadSanitizer workload: four threads run one shared program (each set_input/run/output
 * sequence under the caller's lock, as edgert.h asks), a second shared program through
 * edgert_program_run_with without a lock (the runtime holds the program's lock across each
 * call), and each its own program without a lock, while a fifth thread resizes the pool.
 * (The two ways do not mix on one program: run_with drops the outputs that another thread's
 * edgert_program_output views would still be reading.) Then, on a pool of two
 * threads, two threads run their own programs at once on a batch large enough for the
 * matrix products to split over the pool: a barrier starts each round's runs together, so
 * their parallel regions share the pool; those programs run under a memory limit, and each
 * round also runs once under a limit that grows round by round (from one that refuses the
 * first output to ones that pass or refuse inside a parallel region), which must either match
 * or fail with EDGERT_ERROR_OUT_OF_MEMORY. Exits 0 when every result matches the first one of
 * its batch size. Usage: threads_stress MODEL.edgert (an MLP of 16 inputs and at most 8
 * outputs) */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "edgert/edgert.h"
#include "edgert/threadpool.h"

#define ROUNDS 50
#define WORKERS 4
#define FEATURES 16
#define OUTPUTS 8   /* at most, per row */
#define BATCH 512   /* rows of the side-by-side runs */

/* What one batch size's runs must all produce: the first run's output. */
typedef struct {
  int rows;
  float values[BATCH * OUTPUTS];
  size_t count;
} Expected;

static edgert_program* shared;
static edgert_program* shared_run_with;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static const char* model;
static float input[BATCH * FEATURES];  /* row r, feature i: (r + i) / 16; filled before threads */
static Expected one_row = {1, {0}, 0};
static Expected batch = {BATCH, {0}, 0};
static int failures;
static pthread_mutex_t failures_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t round_start;

/* Runs `program` on the first `rows` rows of `input` into out (room for BATCH * OUTPUTS
 * floats); *count is the number of floats written. */
static int run_rows(edgert_program* program, int rows, float* out, size_t* count) {
  int64_t shape[2] = {rows, FEATURES};
  size_t input_bytes = (size_t)rows * FEATURES * sizeof(float);
  if (edgert_program_set_input(program, 0, EDGERT_FLOAT32, shape, 2, input, input_bytes)) return 1;
  if (edgert_program_run(program)) return 1;
  const void* data = NULL;
  size_t nbytes = 0;
  if (edgert_program_output(program, 0, NULL, NULL, NULL, &data, &nbytes)) return 1;
  if (nbytes > (size_t)rows * OUTPUTS * sizeof(float)) return 1;
  memcpy(out, data, nbytes);
  *count = nbytes / sizeof(float);
  return 0;
}

/* The same through edgert_program_run_with: inputs read in place, the output handed over. */
static int run_with_rows(edgert_program* program, int rows, float* out, size_t* count) {
  int64_t shape[2] = {rows, FEATURES};
  edgert_tensor_view view = {EDGERT_FLOAT32, 2, shape, input,
                             (size_t)rows * FEATURES * sizeof(float)};
  edgert_tensor* outputs[8] = {NULL};
  if (edgert_program_output_count(program) > 8) return 1;
  if (edgert_program_run_with(program, &view, 1, outputs, 8)) return 1;
  edgert_tensor_view result;
  int failed = edgert_tensor_info(outputs[0], &result, NULL) != EDGERT_OK ||
               result.nbytes > (size_t)rows * OUTPUTS * sizeof(float);
  if (!failed) {
    memcpy(out, result.data, result.nbytes);
    *count = result.nbytes / sizeof(float);
  }
  for (size_t i = 0; i < edgert_program_output_count(program); ++i) edgert_tensor_free(outputs[i]);
  return failed;
}

/* Under `limit` bytes for this call: EDGERT_OK with the output matching `expected`, or a
 * refusal by the limit; anything else is a failure. */
static void run_limited_and_check(edgert_program* program, const Expected* expected, uint64_t limit) {
  static __thread float out[BATCH * OUTPUTS];
  int64_t shape[2] = {expected->rows, FEATURES};
  edgert_tensor_view view = {EDGERT_FLOAT32, 2, shape, input, (size_t)expected->rows * FEATURES * sizeof(float)};
  edgert_tensor* outputs[8] = {NULL};
  edgert_status status = edgert_program_run_with_limit(program, &view, 1, outputs, 8, limit);
  int failed = status != EDGERT_OK && status != EDGERT_ERROR_OUT_OF_MEMORY;
  if (status == EDGERT_OK) {
    edgert_tensor_view result;
    failed = edgert_tensor_info(outputs[0], &result, NULL) != EDGERT_OK ||
             result.nbytes != expected->count * sizeof(float);
    if (!failed) {
      memcpy(out, result.data, result.nbytes);
      failed = memcmp(out, expected->values, result.nbytes) != 0;
    }
  }
  for (size_t i = 0; i < edgert_program_output_count(program); ++i) edgert_tensor_free(outputs[i]);
  if (failed) {
    pthread_mutex_lock(&failures_lock);
    ++failures;
    pthread_mutex_unlock(&failures_lock);
  }
}

/* Runs `program` on `expected->rows` rows; a failed run or a different output is a failure. */
static void run_and_check(edgert_program* program, const Expected* expected, int with) {
  static __thread float out[BATCH * OUTPUTS];
  size_t count = 0;
  int failed = with ? run_with_rows(program, expected->rows, out, &count)
                    : run_rows(program, expected->rows, out, &count);
  if (failed || count != expected->count ||
      memcmp(out, expected->values, count * sizeof(float)) != 0) {
    pthread_mutex_lock(&failures_lock);
    ++failures;
    pthread_mutex_unlock(&failures_lock);
  }
}

static void* worker(void* unused) {
  (void)unused;
  edgert_program* own = NULL;
  if (edgert_program_load_file(model, &own)) return NULL;
  for (int round = 0; round < ROUNDS; ++round) {
    pthread_mutex_lock(&shared_lock);
    run_and_check(shared, &one_row, 0);
    pthread_mutex_unlock(&shared_lock);
    run_and_check(shared_run_with, &one_row, 1);
    run_and_check(own, &one_row, 0);
  }
  edgert_program_free(own);
  return NULL;
}

static void* resizer(void* unused) {
  (void)unused;
  for (int round = 0; round < ROUNDS; ++round) edgert_threadpool_set_size((size_t)(1 + round % 3));
  return NULL;
}

/* One of two threads that run their own programs at the same moments, round after round. */
static void* side_by_side(void* program) {
  for (int round = 0; round < ROUNDS; ++round) {
    pthread_barrier_wait(&round_start);
    run_and_check((edgert_program*)program, &batch, 0);
    run_limited_and_check((edgert_program*)program, &batch, (uint64_t)(round + 1) * 8192);
  }
  return NULL;
}

static int run_side_by_side(void) {
  edgert_threadpool_set_size(2);
  edgert_program* programs[2] = {NULL, NULL};
  for (int i = 0; i < 2; ++i) {
    if (edgert_program_load_file(model, &programs[i])) return 1;
    if (edgert_program_set_memory_limit(programs[i], (uint64_t)256 << 20)) return 1;
  }
  pthread_barrier_init(&round_start, NULL, 2);
  pthread_t pair[2];
  for (int i = 0; i < 2; ++i) pthread_create(&pair[i], NULL, side_by_side, programs[i]);
  for (int i = 0; i < 2; ++i) pthread_join(pair[i], NULL);
  pthread_barrier_destroy(&round_start);
  for (int i = 0; i < 2; ++i) edgert_program_free(programs[i]);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  model = argv[1];
  for (int row = 0; row < BATCH; ++row) {
    for (int i = 0; i < FEATURES; ++i) input[row * FEATURES + i] = (float)(row + i) / 16.0f;
  }
  if (edgert_program_load_file(model, &shared) ||
      edgert_program_load_file(model, &shared_run_with)) {
    fprintf(stderr, "load: %s\n", edgert_last_error());
    return 2;
  }
  if (run_rows(shared, 1, one_row.values, &one_row.count)) return 2;
  if (run_rows(shared, BATCH, batch.values, &batch.count)) return 2;
  pthread_t threads[WORKERS + 1];
  for (int i = 0; i < WORKERS; ++i) pthread_create(&threads[i], NULL, worker, NULL);
  pthread_create(&threads[WORKERS], NULL, resizer, NULL);
  for (int i = 0; i <= WORKERS; ++i) pthread_join(threads[i], NULL);
  if (run_side_by_side()) return 2;
  edgert_program_free(shared);
  edgert_program_free(shared_run_with);
  printf("%d failures\n", failures);
  return failures != 0;
}
