// Replaces the global operator new/delete of the process (an executable's definitions take
// precedence over libstdc++'s, for every shared library) to track bytes held.
#include "allocation_tracker.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {

std::atomic<size_t> held{0};
std::atomic<size_t> peak{0};
std::atomic<size_t> baseline{0};
constexpr size_t kHeader = 64;  // keeps every alignment up to 64 and stores the size

void* allocate(size_t size, size_t alignment) {
  if (alignment < kHeader) alignment = kHeader;
  size_t total = (size + alignment + alignment - 1) / alignment * alignment;
  char* base = static_cast<char*>(std::aligned_alloc(alignment, total));
  if (base == nullptr) throw std::bad_alloc();
  char* user = base + alignment;
  reinterpret_cast<size_t*>(user)[-1] = size;
  reinterpret_cast<size_t*>(user)[-2] = alignment;
  size_t now = held += size;
  size_t seen = peak.load();
  while (now > seen && !peak.compare_exchange_weak(seen, now)) {}
  return user;
}

void release(void* pointer) {
  if (pointer == nullptr) return;
  char* user = static_cast<char*>(pointer);
  held -= reinterpret_cast<size_t*>(user)[-1];
  std::free(user - reinterpret_cast<size_t*>(user)[-2]);
}

}  // namespace

std::atomic<size_t> at_load{0};

namespace edgert_fuzz {
void reset_peak() {
  baseline = held.load();
  peak = baseline.load();
  at_load = 0;
}
size_t peak_growth() { return peak.load() - baseline.load(); }
size_t load_peak_growth() { return at_load.load() ? at_load.load() : peak_growth(); }
}  // namespace edgert_fuzz

extern "C" void edgert_fuzz_loaded(void) { at_load = edgert_fuzz::peak_growth() + 1; }

void* operator new(size_t size) { return allocate(size, kHeader); }
void* operator new[](size_t size) { return allocate(size, kHeader); }
void* operator new(size_t size, std::align_val_t alignment) { return allocate(size, static_cast<size_t>(alignment)); }
void* operator new[](size_t size, std::align_val_t alignment) { return allocate(size, static_cast<size_t>(alignment)); }
void operator delete(void* pointer) noexcept { release(pointer); }
void operator delete[](void* pointer) noexcept { release(pointer); }
void operator delete(void* pointer, size_t) noexcept { release(pointer); }
void operator delete[](void* pointer, size_t) noexcept { release(pointer); }
void operator delete(void* pointer, std::align_val_t) noexcept { release(pointer); }
void operator delete[](void* pointer, std::align_val_t) noexcept { release(pointer); }
void operator delete(void* pointer, size_t, std::align_val_t) noexcept { release(pointer); }
void operator delete[](void* pointer, size_t, std::align_val_t) noexcept { release(pointer); }
