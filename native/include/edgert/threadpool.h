/* The one thread pool of the process (libedgert_threadpool). C ABI so every component,
 * whatever compiler built it, shares the same pool. */
#ifndef EDGERT_THREADPOOL_H
#define EDGERT_THREADPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "edgert/export.h"

#if defined(EDGERT_BUILDING_THREADPOOL)
#define EDGERT_THREADPOOL_API EDGERT_HELPER_EXPORT
#else
#define EDGERT_THREADPOOL_API EDGERT_HELPER_IMPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*edgert_range_fn)(void* context, int64_t begin, int64_t end);

/* Identity of the process-wide pool: equal in every library of one process. */
EDGERT_THREADPOOL_API const void* edgert_threadpool_instance(void);
/* Number of threads that run work, the calling thread included (>= 1). */
EDGERT_THREADPOOL_API size_t edgert_threadpool_size(void);
/* Threads a parallel region begun now on the calling thread would get (>= 1, <= size()):
 * the caller and the pool threads not computing for other callers' regions, and no more
 * than an equal share of the pool while other threads have been calling into it (within
 * the last millisecond); 1 inside a region. A snapshot that changes with what other threads run: for work whose result
 * does not depend on how it is split (the float matrix products), to cut itself for the threads it will really have. */
EDGERT_THREADPOOL_API size_t edgert_threadpool_available(void);
/* Replaces the clock of the sharing window above (nanoseconds, monotonic) by `now_ns`; NULL
 * puts the steady clock back. For tests: with a clock they advance themselves, what
 * available() says within and after the window does not depend on how fast the machine is. */
EDGERT_THREADPOOL_API void edgert_threadpool_set_clock(int64_t (*now_ns)(void));
/* Resizes the pool; 0 means one thread per available core. Waits for the regions open in
 * other threads to finish (regions begun meanwhile run inline on their caller). Not to be
 * called from inside a parallel region. */
EDGERT_THREADPOOL_API void edgert_threadpool_set_size(size_t threads);
/* Splits [begin, end) into at most size() chunks of at least `grain` items (one chunk when
 * the range is shorter) and runs fn once on each, on the calling thread and the pool's idle
 * workers; returns when every chunk is done. The chunks depend only on the range, the grain
 * and the pool size. Callable from several threads at once: their regions run concurrently,
 * each caller working on its own; a region begun while every pool thread is computing runs
 * all its chunks inline on its caller. Nested calls run inline. */
EDGERT_THREADPOOL_API void edgert_threadpool_parallel_for(int64_t begin, int64_t end, int64_t grain, edgert_range_fn fn,
                                                          void* context);

#ifdef __cplusplus
} /* extern "C" */

#include <atomic>
#include <exception>
#include <type_traits>

namespace edgert {
// Runs fn(begin, end) over chunks of [begin, end) through the process pool, even when the range
// is one chunk: the pool then counts the caller while fn runs (how it sees programs running side
// by side, edgert_threadpool_available). An exception fn throws (std::bad_alloc, a run's memory
// limit) never crosses the pool's C frames: the first one is kept, the chunks not begun yet
// are skipped, and it is thrown again here once every chunk has returned.
template <class Fn>
void run_on_pool(int64_t begin, int64_t end, int64_t grain, Fn&& fn) {
  // Fn is deduced as a reference type for lvalue callables: strip it before forming a pointer.
  using Callable = typename std::remove_reference<Fn>::type;
  struct Region {
    Callable* fn = nullptr;
    std::atomic<bool> failed{false};
    std::exception_ptr error;
  } region;
  region.fn = &fn;
  edgert_threadpool_parallel_for(
      begin, end, grain,
      [](void* context, int64_t b, int64_t e) {
        auto* held = static_cast<Region*>(context);
        if (held->failed.load(std::memory_order_relaxed)) return;
        try {
          (*held->fn)(b, e);
        } catch (...) {
          if (!held->failed.exchange(true)) held->error = std::current_exception();
        }
      },
      &region);
  if (region.error) std::rethrow_exception(region.error);
}

// Runs fn(begin, end) over chunks of [begin, end) on the process pool; a range within one grain
// runs here without asking the pool.
template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t grain, Fn&& fn) {
  if (end - begin <= grain) {
    if (end > begin) fn(begin, end);
    return;
  }
  run_on_pool(begin, end, grain, fn);
}
}  // namespace edgert
#endif

#endif
