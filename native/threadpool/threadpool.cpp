// The process-wide thread pool. Several threads may be inside parallel regions at once (two
// programs run from two threads): each caller publishes its region on the pool's list of
// open regions and then takes chunks of it itself, from the region's atomic counter, until
// none are left; idle workers join the open region that has the fewest helpers and take
// chunks from it too. A region therefore never waits for a worker that is busy elsewhere,
// and none starves: its caller alone finishes it if no worker comes.
//
// The pool's size is the number of threads that compute at once: the callers inside
// regions count, so a worker is woken only while fewer than `size` threads are computing.
// A region begun while every slot is taken (two callers on a 2-thread pool) runs inline on
// its caller without being published, as on a pool of one: no lock, no wake-up, no third
// thread taking turns with them on two cores. While several threads call into the pool
// (programs run side by side), each caller's regions get an equal share of it (a pool of 2
// and two programs: one thread each, no helper woken between their regions), until a
// millisecond passes with one caller only. available() tells a kernel how many threads a
// region begun now would get, so work whose result does not depend on its split (the float
// matrix products) can cut itself for the threads it will really have.
//
// Chunk boundaries depend only on the range, the grain and the pool size, never on which
// thread takes a chunk, so results are reproducible run to run.
//
// Resizing waits for the open regions to close (regions begun meanwhile run inline on their
// caller), stops the workers and starts new ones. fork(): the child drops the parent's pool
// (its worker threads, and the other callers' regions, do not exist there) and builds a new
// one on first use; a fork does not wait for regions open in other threads. The default size
// is the number of CPUs this process may run on (its affinity mask on Linux; the processor
// count elsewhere). Windows has no fork(): no handlers there.
#if defined(__linux__)
#include <sched.h>
#endif
#if !defined(_WIN32)
#include <pthread.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "edgert/threadpool.h"

namespace {

// True on a pool worker, and on a caller while it runs its region's chunks: a parallel_for
// called from there runs inline.
thread_local bool inside_parallel_region = false;

// The clock of the sharing window (Pool::share): the steady clock, or the one a test installed
// with edgert_threadpool_set_clock, so that a test reads the window without racing it.
std::atomic<int64_t (*)(void)> window_clock{nullptr};

size_t threads_from_environment() {
  const char* configured = std::getenv("EDGERT_NUM_THREADS");
  if (configured == nullptr || *configured == '\0') return 0;
  char* end = nullptr;
  long value = std::strtol(configured, &end, 10);
  return (*end == '\0' && value > 0) ? static_cast<size_t>(value) : 0;
}

size_t usable_cpus() {
#if defined(__linux__)
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0) {
    int count = CPU_COUNT(&mask);
    if (count > 0) return static_cast<size_t>(count);
  }
#endif
  unsigned cores = std::thread::hardware_concurrency();
  return cores > 0 ? cores : 1;
}

size_t resolve_size(size_t requested) {
  if (requested > 0) return std::min<size_t>(requested, 1024);
  return usable_cpus();
}

// One parallel_for call. [begin, end) is cut into `chunks` consecutive chunks whose lengths
// differ by at most one, each at least `grain` long (one chunk when the range is shorter),
// and at most one per pool thread. It lives on its caller's stack; the pool's mutex guards
// `helpers` and the list links.
struct Region {
  Region(int64_t begin, int64_t end, int64_t grain, edgert_range_fn fn, void* context, size_t threads)
      : fn(fn), context(context), begin(begin) {
    const int64_t range = end - begin;
    const int64_t by_grain = std::max<int64_t>(1, range / std::max<int64_t>(grain, 1));
    chunks = std::min<int64_t>(by_grain, static_cast<int64_t>(threads));
    length = range / chunks;
    longer = range % chunks;  // the first `longer` chunks are one item longer
  }

  void run_chunk(int64_t index) const {
    const int64_t first = begin + index * length + std::min(index, longer);
    fn(context, first, first + length + (index < longer ? 1 : 0));
  }

  // Runs chunks until every chunk is taken; each index is handed out once.
  void take_chunks() {
    for (int64_t index = next.fetch_add(1, std::memory_order_relaxed); index < chunks;
         index = next.fetch_add(1, std::memory_order_relaxed)) {
      run_chunk(index);
    }
  }

  void run_all() const {
    for (int64_t index = 0; index < chunks; ++index) run_chunk(index);
  }

  bool has_untaken_chunks() const { return next.load(std::memory_order_relaxed) < chunks; }

  edgert_range_fn fn;
  void* context;
  int64_t begin;
  int64_t chunks = 1;
  int64_t length = 0;
  int64_t longer = 0;
  std::atomic<int64_t> next{0};
  int helpers = 0;                       // workers inside the region
  int max_helpers = 0;                   // the most it may get (its caller's share, less one)
  std::condition_variable helpers_left;  // signalled when helpers drops to 0
  Region* earlier = nullptr;             // the pool's open regions, oldest first
  Region* later = nullptr;
};

class Pool {
 public:
  Pool() { start_workers(resolve_size(threads_from_environment())); }

  size_t size() const { return size_.load(std::memory_order_relaxed); }

  // Threads a region begun now on this thread would get: the caller and the slots no other
  // caller or worker computes in (1 inside a region). A snapshot without the lock: a hint.
  size_t available() const {
    if (inside_parallel_region) return 1;
    const size_t busy = computing_.load(std::memory_order_relaxed);
    return std::min(size() > busy ? size() - busy : 1, share());
  }

  void resize(size_t requested) {
    std::lock_guard<std::mutex> one_resize_at_a_time(resize_mutex_);
    stop_workers();
    start_workers(resolve_size(requested));
  }

  void parallel_for(int64_t begin, int64_t end, int64_t grain, edgert_range_fn fn, void* context) {
    if (end <= begin || fn == nullptr) return;
    Region region(begin, end, grain, fn, context, size());
    if (inside_parallel_region) {
      region.run_all();
      return;
    }
    Caller counted_as_a_caller{*this};
    if (region.chunks == 1) {
      region.run_all();
      return;
    }
    const size_t threads = std::min(available(), static_cast<size_t>(region.chunks));
    if (threads < 2 || !open(region, threads - 1)) {
      InlineRegion counted_while_it_runs{*this};
      region.run_all();
      return;
    }
    OpenRegion closing_at_scope_end{*this, region};
    inside_parallel_region = true;
    region.take_chunks();
  }

 private:
  using Clock = std::chrono::steady_clock;

  static int64_t now_ns() {
    int64_t (*installed)(void) = window_clock.load(std::memory_order_relaxed);
    if (installed != nullptr) return installed();
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  }

  // The threads one caller's region may use: the whole pool, or while several threads have
  // been calling into it (in the last kSharedWindowNs), an equal share of it, at least 1.
  size_t share() const {
    if (now_ns() >= shared_until_.load(std::memory_order_relaxed)) return size();
    return std::max<size_t>(1, size() / std::max<size_t>(1, peak_callers_.load(std::memory_order_relaxed)));
  }

  // A thread inside a region it called (not a nested one). When it finds other callers there,
  // the pool is shared for the next kSharedWindowNs among the most callers seen at once: two
  // programs run side by side take turns between their regions, so the window outlasts the
  // gaps, and a program left alone gets the whole pool back once it ends.
  struct Caller {
    explicit Caller(Pool& pool) : pool(pool) {
      const size_t callers = ++pool.callers_;
      if (callers >= 2) pool.note_sharing(callers);
    }
    ~Caller() { --pool.callers_; }
    Pool& pool;
  };

  void note_sharing(size_t callers) {
    const int64_t now = now_ns();
    if (now >= shared_until_.load(std::memory_order_relaxed)) {
      peak_callers_.store(callers, std::memory_order_relaxed);
    } else {
      size_t peak = peak_callers_.load(std::memory_order_relaxed);
      while (peak < callers && !peak_callers_.compare_exchange_weak(peak, callers, std::memory_order_relaxed)) {
      }
    }
    shared_until_.store(now + kSharedWindowNs, std::memory_order_relaxed);
  }

  // A region its caller runs inline because every slot is taken: the caller still counts as
  // computing, so no worker is woken into its slot meanwhile. When it leaves, the slot may go
  // to an idle worker if a published region still has chunks to take.
  struct InlineRegion {
    explicit InlineRegion(Pool& pool) : pool(pool) {
      inside_parallel_region = true;
      ++pool.computing_;
    }
    ~InlineRegion() {
      inside_parallel_region = false;
      // seq_cst with open()'s increments: either this sees the region just opened, or that
      // open() saw this slot free and woke a worker itself.
      --pool.computing_;
      if (pool.open_regions_.load() > 0) {
        std::lock_guard<std::mutex> lock(pool.mutex_);
        if (pool.idle_workers_ > 0 && pool.claimable() != nullptr) pool.work_available_.notify_one();
      }
    }
    Pool& pool;
  };

  // Closes a published region when its caller leaves parallel_for, also when a chunk throws
  // there: the list must never keep a pointer into a finished caller's stack.
  struct OpenRegion {
    Pool& pool;
    Region& region;
    ~OpenRegion() {
      inside_parallel_region = false;
      pool.close(region);
    }
  };

  // Publishes the region to the workers; false while a resize is under way (the caller then
  // runs it inline).
  bool open(Region& region, size_t helpers) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (resizing_) return false;
    region.max_helpers = static_cast<int>(helpers);
    link(region);
    ++open_regions_;
    ++computing_;
    wake_helpers(helpers);
    return true;
  }

  // Every chunk is taken: unpublishes the region, frees the caller's slot (a helper that
  // finishes here may go on to another region) and waits for its helpers' last chunks.
  void close(Region& region) {
    std::unique_lock<std::mutex> lock(mutex_);
    unlink(region);
    --computing_;
    if (idle_workers_ > 0 && claimable() != nullptr) work_available_.notify_one();
    region.helpers_left.wait(lock, [&] { return region.helpers == 0; });
    if (--open_regions_ == 0 && resizing_) regions_closed_.notify_all();
  }

  // Wakes up to `wanted` idle workers, no more than there are free slots (threads not
  // computing). Called with mutex_ held.
  void wake_helpers(size_t wanted) {
    const size_t slots = size() > computing_ ? size() - computing_ : 0;
    const size_t waking = std::min({wanted, slots, idle_workers_});
    if (waking == idle_workers_) {
      if (waking > 0) work_available_.notify_all();
      return;
    }
    for (size_t i = 0; i < waking; ++i) work_available_.notify_one();
  }

  // The open region with untaken chunks and the fewest helpers (the oldest among equals), or
  // nullptr when there is none or every slot is taken. Called with mutex_ held.
  Region* claimable() const {
    if (computing_ >= size()) return nullptr;
    Region* chosen = nullptr;
    for (Region* region = oldest_; region != nullptr; region = region->later) {
      if (region->has_untaken_chunks() && region->helpers < region->max_helpers &&
          (chosen == nullptr || region->helpers < chosen->helpers)) {
        chosen = region;
      }
    }
    return chosen;
  }

  void link(Region& region) {
    region.earlier = newest_;
    region.later = nullptr;
    (newest_ != nullptr ? newest_->later : oldest_) = &region;
    newest_ = &region;
  }

  void unlink(Region& region) {
    (region.earlier != nullptr ? region.earlier->later : oldest_) = region.later;
    (region.later != nullptr ? region.later->earlier : newest_) = region.earlier;
  }

  void worker_loop() {
    inside_parallel_region = true;  // a kernel's nested region runs inline on its worker
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      Region* region = nullptr;
      ++idle_workers_;
      work_available_.wait(lock, [&] { return stopping_ || (region = claimable()) != nullptr; });
      --idle_workers_;
      if (stopping_) return;
      help(lock, *region);
    }
  }

  // Takes chunks of `region` until none are left, then leaves it. Called with mutex_ held.
  void help(std::unique_lock<std::mutex>& lock, Region& region) {
    ++region.helpers;
    ++computing_;
    lock.unlock();
    region.take_chunks();
    lock.lock();
    --computing_;
    if (--region.helpers == 0) region.helpers_left.notify_one();
  }

  void start_workers(size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      size_ = size;
      stopping_ = false;
      resizing_ = false;
    }
    for (size_t i = 1; i < size; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  // Waits for the open regions to close (regions begun meanwhile run inline), then stops and
  // joins the workers.
  void stop_workers() {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      resizing_ = true;
      regions_closed_.wait(lock, [&] { return open_regions_ == 0; });
      stopping_ = true;
      work_available_.notify_all();
    }
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
  }

  std::mutex resize_mutex_;  // one resize at a time; guards workers_
  std::vector<std::thread> workers_;
  std::mutex mutex_;                        // guards everything below but size_
  std::condition_variable work_available_;  // idle workers wait here
  std::condition_variable regions_closed_;  // a resize waits here for open_regions_ == 0
  Region* oldest_ = nullptr;                // the open regions, a doubly linked list
  Region* newest_ = nullptr;
  // Written under mutex_ but for computing_'s inline-region updates; atomic so that
  // available() and an inline region's end can read them without the lock.
  std::atomic<size_t> open_regions_{0};  // regions between open() and the end of close()
  std::atomic<size_t> computing_{0};     // callers inside regions (published or inline), helpers
  size_t idle_workers_ = 0;              // workers waiting on work_available_
  bool resizing_ = false;
  bool stopping_ = false;
  std::atomic<size_t> size_{1};  // written under mutex_ while no region is open
  // Sharing between callers (share(), note_sharing()): hints read and written without a lock.
  static constexpr int64_t kSharedWindowNs = 1000000;
  std::atomic<size_t> callers_{0};        // threads inside regions they called
  std::atomic<size_t> peak_callers_{1};   // the most callers seen at once in the window
  std::atomic<int64_t> shared_until_{0};  // end of the sharing window (steady clock, ns)
};

// Leaked on purpose: kernels may run during other libraries' static destruction, and
// joining threads from a static destructor at exit can deadlock. After fork() the child's
// copy is abandoned (never touched again) and a new pool is made on first use.
std::mutex creation;
std::atomic<Pool*> instance{nullptr};

void before_fork() {
  creation.lock();
}

void after_fork_in_parent() {
  creation.unlock();
}

void after_fork_in_child() {
  instance.store(nullptr);  // its worker threads exist only in the parent
  creation.unlock();
}

Pool& pool() {
  Pool* existing = instance.load(std::memory_order_acquire);
  if (existing != nullptr) return *existing;
  std::lock_guard<std::mutex> hold(creation);
  if (instance.load() == nullptr) {
#if !defined(_WIN32)
    static const bool registered = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) == 0;
    (void)registered;
#endif
    instance.store(new Pool(), std::memory_order_release);
  }
  return *instance.load();
}

}  // namespace

extern "C" {

EDGERT_THREADPOOL_API const char* edgert_threadpool_component(void) {
  return "threadpool";
}

const void* edgert_threadpool_instance(void) {
  return &pool();
}

size_t edgert_threadpool_size(void) {
  return pool().size();
}

size_t edgert_threadpool_available(void) {
  return pool().available();
}

void edgert_threadpool_set_clock(int64_t (*now_ns)(void)) {
  window_clock.store(now_ns, std::memory_order_relaxed);
}

void edgert_threadpool_set_size(size_t threads) {
  pool().resize(threads);
}

void edgert_threadpool_parallel_for(int64_t begin, int64_t end, int64_t grain, edgert_range_fn fn, void* context) {
  pool().parallel_for(begin, end, grain, fn, context);
}

}  // extern "C"
