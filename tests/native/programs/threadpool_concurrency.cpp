// Parallel regions of several threads at once on the process pool (tests/native/test_threadpool.py).
//   threadpool_concurrency regions       many threads x many regions, nested regions, resizes
//                                        while idle and while other threads are in regions;
//                                        prints "regions N chunks N nested N"
//   threadpool_concurrency overlap       two threads' regions are inside their chunks at the
//                                        same time (each waits for the other: a pool that runs
//                                        one region at a time never returns); prints "overlap"
//   threadpool_concurrency available     on a pool of 2: available() from an idle pool, inside
//                                        a region, and while another thread computes in a
//                                        region; a region begun then runs all its chunks on its
//                                        caller; on a pool of 4 beside another caller half of it,
//                                        alone again all of it; prints "available 2 1 1 inline 2 4"
//   threadpool_concurrency fork MODEL    forks while another thread is inside a region; the
//                                        child resizes, runs regions and MODEL, and must match
//                                        the parent; prints "child 0"
// Exits 1 with a message on stderr at the first wrong result.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "edgert/edgert.h"
#include "edgert/threadpool.h"

namespace {

std::atomic<long> regions_checked{0};
std::atomic<long> chunks_checked{0};
std::atomic<long> nested_checked{0};

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::exit(1);
}

struct Chunk {
  int64_t begin, end;
  bool operator<(const Chunk& other) const { return begin < other.begin; }
  bool operator==(const Chunk& other) const { return begin == other.begin && end == other.end; }
};

// The chunks the pool promises for a region: min(range / grain, size) of them (at least one),
// consecutive, lengths differing by at most one, the longer ones first.
std::vector<Chunk> expected_chunks(int64_t begin, int64_t end, int64_t grain, int64_t size) {
  const int64_t range = end - begin;
  const int64_t count = std::min(std::max<int64_t>(1, range / grain), size);
  std::vector<Chunk> chunks;
  for (int64_t index = 0, first = begin; index < count; ++index) {
    const int64_t length = range / count + (index < range % count ? 1 : 0);
    chunks.push_back({first, first + length});
    first += length;
  }
  return chunks;
}

// A region called from inside a chunk covers its range once; when the outer region was split
// over the pool (`inline_expected`) it runs inline, on the chunk's thread. (A region of one
// chunk runs on its caller without opening a region, so what it calls may use the pool.)
void check_nested_region(int64_t length, bool inline_expected) {
  const std::thread::id outer = std::this_thread::get_id();
  std::vector<int> hits(static_cast<size_t>(length), 0);
  bool same_thread = true;
  edgert::parallel_for(0, length, 1, [&](int64_t begin, int64_t end) {
    same_thread = same_thread && std::this_thread::get_id() == outer;
    for (int64_t i = begin; i < end; ++i) ++hits[static_cast<size_t>(i)];
  });
  if (inline_expected && !same_thread) fail("a nested region left its thread");
  for (int hit : hits)
    if (hit != 1) fail("a nested region missed or repeated an item");
  ++nested_checked;
}

// One region over [begin, end): every item is run exactly once, the chunks are disjoint,
// cover the range, are at least `grain` long (or the only chunk), and when the pool size is
// fixed (`size` > 0) they are exactly the promised ones.
void check_region(int64_t begin, int64_t end, int64_t grain, int64_t size, bool nest) {
  const int64_t range = end - begin;
  std::vector<std::atomic<int>> hits(static_cast<size_t>(range));
  for (std::atomic<int>& hit : hits) hit = 0;
  std::mutex chunks_lock;
  std::vector<Chunk> chunks;
  const bool split = size > 0 && range > grain && expected_chunks(begin, end, grain, size).size() > 1;
  edgert::parallel_for(begin, end, grain, [&](int64_t first, int64_t last) {
    for (int64_t i = first; i < last; ++i) ++hits[static_cast<size_t>(i - begin)];
    if (nest) check_nested_region(17, split);
    std::lock_guard<std::mutex> hold(chunks_lock);
    chunks.push_back({first, last});
  });
  for (const std::atomic<int>& hit : hits)
    if (hit != 1) fail("an item ran " + std::to_string(hit.load()) + " times");
  std::sort(chunks.begin(), chunks.end());
  if (range > grain && chunks.size() > 1) {
    for (const Chunk& chunk : chunks)
      if (chunk.end - chunk.begin < grain) fail("a chunk shorter than the grain");
  }
  if (size > 0 && range > grain && chunks != expected_chunks(begin, end, grain, size)) {
    fail("chunks of [" + std::to_string(begin) + ", " + std::to_string(end) + ") grain " + std::to_string(grain) +
         " differ from the plan for size " + std::to_string(size));
  }
  ++regions_checked;
  chunks_checked += static_cast<long>(chunks.size());
}

// `count` regions of varied ranges and grains (from `seed`), every fifth one nesting.
void run_regions(unsigned seed, int count, int64_t size) {
  for (int region = 0; region < count; ++region) {
    seed = seed * 1103515245u + 12345u;
    const int64_t begin = static_cast<int64_t>(seed % 100) - 50;
    const int64_t length = 1 + static_cast<int64_t>((seed >> 8) % 3000);
    const int64_t grain = 1 + static_cast<int64_t>((seed >> 20) % 200);
    check_region(begin, begin + length, grain, size, region % 5 == 0);
  }
}

void run_in_threads(int threads, int count, int64_t size) {
  std::vector<std::thread> callers;
  for (int t = 0; t < threads; ++t) {
    callers.emplace_back([=] { run_regions(static_cast<unsigned>(t + 1) * 7919u, count, size); });
  }
  for (std::thread& caller : callers) caller.join();
}

int regions() {
  for (size_t size : {2, 3, 4, 1, 2}) {  // resized while idle between rounds
    edgert_threadpool_set_size(size);
    if (edgert_threadpool_size() != size) fail("resize while idle");
    run_in_threads(6, 200, static_cast<int64_t>(size));
  }
  // Resizes while four threads are inside regions: chunk plans follow whichever size each
  // region saw, so only coverage and grain are checked.
  std::atomic<bool> resizing{true};
  std::thread resizer([&] {
    for (int round = 0; round < 40; ++round) edgert_threadpool_set_size(static_cast<size_t>(1 + round % 4));
    resizing = false;
  });
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      unsigned seed = static_cast<unsigned>(t + 11);
      do run_regions(seed++, 20, 0);
      while (resizing);
    });
  }
  resizer.join();
  for (std::thread& caller : callers) caller.join();
  std::printf("regions %ld chunks %ld nested %ld\n", regions_checked.load(), chunks_checked.load(),
              nested_checked.load());
  return 0;
}

// Thread one's chunks wait until thread two is inside a chunk of its own region, and the
// other way round: both regions must be in progress at once.
int overlap() {
  edgert_threadpool_set_size(2);
  std::atomic<bool> inside[2] = {{false}, {false}};
  auto region = [&](int self) {
    edgert::parallel_for(0, 2, 1, [&, self](int64_t, int64_t) {
      inside[self] = true;
      while (!inside[1 - self]) std::this_thread::yield();
    });
  };
  std::thread one(region, 0), two(region, 1);
  one.join();
  two.join();
  std::printf("overlap\n");
  return 0;
}

// The clock available()'s sharing window reads in `available`: it moves only when the test
// moves it.
std::atomic<int64_t> test_clock_ns{1000000000};
int64_t test_clock() { return test_clock_ns.load(); }

// What a region begun now would get, as the pool's state changes: every thread of an idle
// pool, one inside a region, one while another thread's region keeps the second slot busy
// (its chunks wait for `release`); a region begun then runs on its caller alone.
int available() {
  edgert_threadpool_set_size(2);
  const size_t idle = edgert_threadpool_available();
  std::atomic<size_t> inside{0};
  edgert::parallel_for(0, 2, 1, [&](int64_t begin, int64_t) {
    if (begin == 0) inside = edgert_threadpool_available();
  });
  std::atomic<bool> entered{false}, release{false};
  std::thread other([&] {
    edgert::parallel_for(0, 2, 1, [&](int64_t, int64_t) {
      entered = true;
      while (!release) std::this_thread::yield();
    });
  });
  while (!entered) std::this_thread::yield();
  const size_t beside = edgert_threadpool_available();
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0}, chunks{0};
  edgert::parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    ++chunks;
    if (std::this_thread::get_id() != caller) ++elsewhere;
  });
  release = true;
  other.join();
  if (chunks != 2) fail("a region beside another ran " + std::to_string(chunks.load()) + " chunks");
  // A pool of 4 shared by two callers: while another thread is inside a region (of one chunk:
  // it takes no pool thread), a region begun here makes two callers at once, and for the next
  // millisecond each caller gets half the pool. Once the other has left and the window has
  // passed, the one caller left gets all of it. The window's clock is this test's own (it moves
  // only when told): the reads do not race the machine's speed.
  edgert_threadpool_set_size(4);
  edgert_threadpool_set_clock(test_clock);
  std::atomic<bool> in_single{false}, leave{false};
  std::thread single([&] {
    edgert::run_on_pool(0, 1, 1, [&](int64_t, int64_t) {
      in_single = true;
      while (!leave) std::this_thread::yield();
    });
  });
  while (!in_single) std::this_thread::yield();
  edgert::run_on_pool(0, 1, 1, [](int64_t, int64_t) {});  // two callers at once: the window opens
  const size_t half = edgert_threadpool_available();       // the clock has not moved: within it
  leave = true;
  single.join();
  test_clock_ns += 2000000;  // two milliseconds later: past the window
  const size_t whole = edgert_threadpool_available();
  edgert_threadpool_set_clock(nullptr);
  std::printf("available %zu %zu %zu %s %zu %zu\n", idle, inside.load(), beside, elsewhere == 0 ? "inline" : "split",
              half, whole);
  return 0;
}

std::vector<float> run_model(edgert_program* program) {
  float input[16];
  int64_t shape[2] = {1, 16};
  for (int i = 0; i < 16; ++i) input[i] = static_cast<float>(i) / 16.0f;
  const void* data = nullptr;
  size_t bytes = 0;
  if (edgert_program_set_input(program, 0, EDGERT_FLOAT32, shape, 2, input, sizeof input) ||
      edgert_program_run(program) || edgert_program_output(program, 0, nullptr, nullptr, nullptr, &data, &bytes)) {
    fail(std::string("run: ") + edgert_last_error());
  }
  const float* values = static_cast<const float*>(data);
  return std::vector<float>(values, values + bytes / sizeof(float));
}

std::vector<float> load_and_run(const char* model) {
  edgert_program* program = nullptr;
  if (edgert_program_load_file(model, &program)) fail(std::string("load: ") + edgert_last_error());
  std::vector<float> out = run_model(program);
  edgert_program_free(program);
  return out;
}

// In the child: the pool the parent was using is gone; a new one resizes, runs regions and
// the model. Exit status 0 when all of it matches.
[[noreturn]] void child_after_fork(const char* model, const std::vector<float>& expected) {
  edgert_threadpool_set_size(3);
  run_in_threads(2, 50, 3);
  const bool same = load_and_run(model) == expected && edgert_threadpool_size() == 3;
  std::_Exit(same ? 0 : 1);
}

int fork_inside_region(const char* model) {
  edgert_threadpool_set_size(2);
  const std::vector<float> expected = load_and_run(model);
  std::atomic<bool> entered{false}, released{false};
  std::thread inside([&] {
    edgert::parallel_for(0, 2, 1, [&](int64_t, int64_t) {
      entered = true;
      while (!released) std::this_thread::yield();
    });
  });
  while (!entered) std::this_thread::yield();
  const pid_t child = fork();
  if (child < 0) fail("fork");
  if (child == 0) child_after_fork(model, expected);
  int status = 0;
  waitpid(child, &status, 0);
  released = true;
  inside.join();
  if (load_and_run(model) != expected) fail("the parent's run after the fork differs");
  std::printf("child %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "regions") return regions();
  if (mode == "overlap") return overlap();
  if (mode == "available") return available();
  if (mode == "fork" && argc == 3) return fork_inside_region(argv[2]);
  std::fprintf(stderr, "usage: threadpool_concurrency regions | overlap | available | fork MODEL\n");
  return 2;
}
