// Replaces the global operator new/delete of the process (an executable's definitions take
// precedence over libstdc++'s, for every shared library) to track bytes held. Every
// replaceable overload is defined here (plain, array, aligned, sized, nothrow): one left to
// libstdc++ would allocate without the header release() reads, or free memory allocate()
// made, as soon as some library (a delegate, the thread pool, std::stable_sort's nothrow
// temporary buffer) calls it.
#include "allocation_tracker.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

std::atomic<size_t> held{0};
std::atomic<size_t> peak{0};
std::atomic<size_t> baseline{0};
constexpr size_t kHeader = 64;  // keeps every alignment up to 64 and stores the size

// Null when the memory cannot be had.
void* try_allocate(size_t size, size_t alignment) noexcept {
  if (alignment < kHeader) alignment = kHeader;
  if (size > SIZE_MAX - 2 * alignment) return nullptr;
  size_t total = (size + alignment + alignment - 1) / alignment * alignment;
  char* base = static_cast<char*>(std::aligned_alloc(alignment, total));
  if (base == nullptr) return nullptr;
  char* user = base + alignment;
  reinterpret_cast<size_t*>(user)[-1] = size;
  reinterpret_cast<size_t*>(user)[-2] = alignment;
  size_t now = held += size;
  size_t seen = peak.load();
  while (now > seen && !peak.compare_exchange_weak(seen, now)) {
  }
  return user;
}

void* allocate(size_t size, size_t alignment) {
  void* memory = try_allocate(size, alignment);
  if (memory == nullptr) throw std::bad_alloc();
  return memory;
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
size_t peak_growth() {
  return peak.load() - baseline.load();
}
size_t load_peak_growth() {
  return at_load.load() ? at_load.load() : peak_growth();
}
}  // namespace edgert_fuzz

extern "C" void edgert_fuzz_loaded(void) {
  at_load = edgert_fuzz::peak_growth() + 1;
}

namespace {
std::atomic<size_t> delegated{0};
}  // namespace

extern "C" void edgert_fuzz_delegated(void) {
  ++delegated;
}
size_t edgert_fuzz::delegated_runs() {
  return delegated.load();
}

using std::align_val_t;
using std::nothrow_t;

void* operator new(size_t size) {
  return allocate(size, kHeader);
}
void* operator new[](size_t size) {
  return allocate(size, kHeader);
}
void* operator new(size_t size, std::align_val_t alignment) {
  return allocate(size, static_cast<size_t>(alignment));
}
void* operator new[](size_t size, std::align_val_t alignment) {
  return allocate(size, static_cast<size_t>(alignment));
}
void* operator new(size_t size, const nothrow_t&) noexcept {
  return try_allocate(size, kHeader);
}
void* operator new[](size_t size, const nothrow_t&) noexcept {
  return try_allocate(size, kHeader);
}
void* operator new(size_t size, align_val_t alignment, const nothrow_t&) noexcept {
  return try_allocate(size, static_cast<size_t>(alignment));
}
void* operator new[](size_t size, align_val_t alignment, const nothrow_t&) noexcept {
  return try_allocate(size, static_cast<size_t>(alignment));
}
void operator delete(void* pointer) noexcept {
  release(pointer);
}
void operator delete[](void* pointer) noexcept {
  release(pointer);
}
void operator delete(void* pointer, size_t) noexcept {
  release(pointer);
}
void operator delete[](void* pointer, size_t) noexcept {
  release(pointer);
}
void operator delete(void* pointer, std::align_val_t) noexcept {
  release(pointer);
}
void operator delete[](void* pointer, std::align_val_t) noexcept {
  release(pointer);
}
void operator delete(void* pointer, size_t, std::align_val_t) noexcept {
  release(pointer);
}
void operator delete[](void* pointer, size_t, std::align_val_t) noexcept {
  release(pointer);
}
void operator delete(void* pointer, const nothrow_t&) noexcept {
  release(pointer);
}
void operator delete[](void* pointer, const nothrow_t&) noexcept {
  release(pointer);
}
void operator delete(void* pointer, align_val_t, const nothrow_t&) noexcept {
  release(pointer);
}
void operator delete[](void* pointer, align_val_t, const nothrow_t&) noexcept {
  release(pointer);
}
