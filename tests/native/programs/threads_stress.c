/* ThreadSanitizer workload: four threads run one shared program (each set_input/run/output
 * sequence under the caller's lock, as edgert.h asks), a second shared program through
 * edgert_program_run_with without a lock (the runtime holds the program's lock across each
 * call), and each its own program without a lock, while a fifth thread resizes the pool.
 * (The two ways do not mix on one program: run_with drops the outputs that another thread's
 * edgert_program_output views would still be reading.) Exits 0 when every result matches
 * the first one. Usage: threads_stress MODEL.edgert */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "edgert/edgert.h"
#include "edgert/threadpool.h"

#define ROUNDS 50
#define WORKERS 4

static edgert_program* shared;
static edgert_program* shared_run_with;
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static const char* model;
static float expected[64];
static size_t expected_count;
static int failures;
static pthread_mutex_t failures_lock = PTHREAD_MUTEX_INITIALIZER;

static int run_once(edgert_program* program, float* out, size_t* count) {
  float input[16];
  int64_t shape[2] = {1, 16};
  for (int i = 0; i < 16; ++i) input[i] = (float)i / 16.0f;
  if (edgert_program_set_input(program, 0, EDGERT_FLOAT32, shape, 2, input, sizeof input)) return 1;
  if (edgert_program_run(program)) return 1;
  const void* data = NULL;
  size_t nbytes = 0;
  if (edgert_program_output(program, 0, NULL, NULL, NULL, &data, &nbytes)) return 1;
  if (nbytes > sizeof expected) return 1;
  memcpy(out, data, nbytes);
  *count = nbytes / sizeof(float);
  return 0;
}

/* The same through edgert_program_run_with: inputs read in place, the output handed over. */
static int run_with_once(edgert_program* program, float* out, size_t* count) {
  float input[16];
  int64_t shape[2] = {1, 16};
  for (int i = 0; i < 16; ++i) input[i] = (float)i / 16.0f;
  edgert_tensor_view view = {EDGERT_FLOAT32, 2, shape, input, sizeof input};
  edgert_tensor* outputs[8] = {NULL};
  if (edgert_program_output_count(program) > 8) return 1;
  if (edgert_program_run_with(program, &view, 1, outputs, 8)) return 1;
  edgert_tensor_view result;
  int failed = edgert_tensor_info(outputs[0], &result, NULL) != EDGERT_OK ||
               result.nbytes > sizeof expected;
  if (!failed) {
    memcpy(out, result.data, result.nbytes);
    *count = result.nbytes / sizeof(float);
  }
  for (size_t i = 0; i < edgert_program_output_count(program); ++i) edgert_tensor_free(outputs[i]);
  return failed;
}

static void check(int failed, const float* out, size_t count) {
  if (failed || count != expected_count || memcmp(out, expected, count * sizeof(float)) != 0) {
    pthread_mutex_lock(&failures_lock);
    ++failures;
    pthread_mutex_unlock(&failures_lock);
  }
}

static void* worker(void* unused) {
  (void)unused;
  edgert_program* own = NULL;
  if (edgert_program_load_file(model, &own)) return NULL;
  float out[64];
  size_t count = 0;
  for (int round = 0; round < ROUNDS; ++round) {
    pthread_mutex_lock(&shared_lock);
    int failed = run_once(shared, out, &count);
    pthread_mutex_unlock(&shared_lock);
    check(failed, out, count);
    check(run_with_once(shared_run_with, out, &count), out, count);
    check(run_once(own, out, &count), out, count);
  }
  edgert_program_free(own);
  return NULL;
}

static void* resizer(void* unused) {
  (void)unused;
  for (int round = 0; round < ROUNDS; ++round) edgert_threadpool_set_size((size_t)(1 + round % 3));
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  model = argv[1];
  if (edgert_program_load_file(model, &shared) ||
      edgert_program_load_file(model, &shared_run_with)) {
    fprintf(stderr, "load: %s\n", edgert_last_error());
    return 2;
  }
  if (run_once(shared, expected, &expected_count)) return 2;
  pthread_t threads[WORKERS + 1];
  for (int i = 0; i < WORKERS; ++i) pthread_create(&threads[i], NULL, worker, NULL);
  pthread_create(&threads[WORKERS], NULL, resizer, NULL);
  for (int i = 0; i <= WORKERS; ++i) pthread_join(threads[i], NULL);
  edgert_program_free(shared);
  edgert_program_free(shared_run_with);
  printf("%d failures\n", failures);
  return failures != 0;
}
