// The process-wide thread pool: workers wait on a condition variable for a job; the caller
// and the workers take chunks from an atomic counter. Chunk boundaries depend only on the
// range, the grain and the pool size, so results are reproducible run to run.
//
// Safe from any thread (one parallel region or resize at a time) and across fork(): the
// fork handlers hold the pool still while the process forks, and the child drops the
// parent's pool (its worker threads do not exist there) and builds a new one on first use.
// The default size is the number of CPUs this process may run on (its affinity mask on
// Linux; the processor count elsewhere). Windows has no fork(): no handlers there.
#if defined(__linux__)
#include <sched.h>
#endif
#if !defined(_WIN32)
#include <pthread.h>
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "edgert/threadpool.h"

namespace {

thread_local bool inside_parallel_region = false;

struct Job {
  edgert_range_fn fn = nullptr;
  void* context = nullptr;
  int64_t begin = 0;
  int64_t end = 0;
  int64_t chunk = 1;
  int64_t chunks = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> done{0};
};

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

class Pool {
 public:
  Pool() { start(resolve_size(threads_from_environment())); }

  size_t size() const { return size_.load(); }

  // fork(): the prepare handler holds the pool still; parent and child release it.
  void hold_for_fork() { submit_mutex_.lock(); }
  void release_after_fork() { submit_mutex_.unlock(); }

  void resize(size_t requested) {
    std::lock_guard<std::mutex> submit(submit_mutex_);
    stop();
    start(resolve_size(requested));
  }

  void parallel_for(int64_t begin, int64_t end, int64_t grain, edgert_range_fn fn, void* context) {
    if (end <= begin || fn == nullptr) return;
    Job job;
    plan(job, begin, end, grain, fn, context);
    if (inside_parallel_region || size_.load() == 1 || job.chunks == 1) {
      run_inline(job);
      return;
    }
    std::lock_guard<std::mutex> submit(submit_mutex_);
    publish(&job);
    work_on(job);
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [&] { return job.done.load() == job.chunks && users_ == 0; });
    job_ = nullptr;
  }

 private:
  void plan(Job& job, int64_t begin, int64_t end, int64_t grain, edgert_range_fn fn, void* context) {
    const int64_t range = end - begin;
    grain = std::max<int64_t>(grain, 1);
    const int64_t by_grain = (range + grain - 1) / grain;
    job.chunks = std::max<int64_t>(1, std::min<int64_t>(by_grain, static_cast<int64_t>(size_.load())));
    job.chunk = (range + job.chunks - 1) / job.chunks;
    job.chunks = (range + job.chunk - 1) / job.chunk;
    job.fn = fn;
    job.context = context;
    job.begin = begin;
    job.end = end;
  }

  static void run_chunk(Job& job, int64_t index) {
    const int64_t first = job.begin + index * job.chunk;
    job.fn(job.context, first, std::min(job.end, first + job.chunk));
  }

  static void run_inline(Job& job) {
    for (int64_t i = 0; i < job.chunks; ++i) run_chunk(job, i);
  }

  void publish(Job* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    ++generation_;
    wake_.notify_all();
  }

  void work_on(Job& job) {
    const bool was_inside = inside_parallel_region;
    inside_parallel_region = true;
    for (int64_t index = job.next++; index < job.chunks; index = job.next++) {
      run_chunk(job, index);
      job.done++;
    }
    inside_parallel_region = was_inside;
  }

  void worker_loop() {
    uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stopping_ || (generation_ != seen && job_ != nullptr); });
      if (stopping_) return;
      seen = generation_;
      Job* job = job_;
      ++users_;
      lock.unlock();
      work_on(*job);
      lock.lock();
      --users_;
      finished_.notify_all();
    }
  }

  void start(size_t size) {
    size_ = size;
    stopping_ = false;
    for (size_t i = 1; i < size; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      wake_.notify_all();
    }
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
  }

  std::mutex submit_mutex_;  // one parallel region (or resize) at a time
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable finished_;
  std::vector<std::thread> workers_;
  Job* job_ = nullptr;
  uint64_t generation_ = 0;
  int users_ = 0;
  bool stopping_ = false;
  std::atomic<size_t> size_{1};
};

// Leaked on purpose: kernels may run during other libraries' static destruction, and
// joining threads from a static destructor at exit can deadlock. After fork() the child's
// copy is abandoned (never touched again) and a new pool is made on first use.
std::mutex creation;
Pool* instance = nullptr;

void before_fork() {
  creation.lock();
  if (instance != nullptr) instance->hold_for_fork();
}

void after_fork_in_parent() {
  if (instance != nullptr) instance->release_after_fork();
  creation.unlock();
}

void after_fork_in_child() {
  instance = nullptr;  // its worker threads exist only in the parent
  creation.unlock();
}

Pool& pool() {
  std::lock_guard<std::mutex> hold(creation);
  if (instance == nullptr) {
#if !defined(_WIN32)
    static const bool registered =
        pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) == 0;
    (void)registered;
#endif
    instance = new Pool();
  }
  return *instance;
}

}  // namespace

extern "C" {

EDGERT_THREADPOOL_API const char* edgert_threadpool_component(void) { return "threadpool"; }

const void* edgert_threadpool_instance(void) { return &pool(); }

size_t edgert_threadpool_size(void) { return pool().size(); }

void edgert_threadpool_set_size(size_t threads) { pool().resize(threads); }

void edgert_threadpool_parallel_for(int64_t begin, int64_t end, int64_t grain, edgert_range_fn fn,
                                    void* context) {
  pool().parallel_for(begin, end, grain, fn, context);
}

}  // extern "C"
