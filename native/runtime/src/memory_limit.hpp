// A run's memory limit (Program::set_memory_limit, EDGERT_MEMORY_LIMIT): the tensor memory the
// thread running a program allocates while the run lasts is counted against it, and an
// allocation that would take the count past the limit is refused before it is made.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <new>
#include <string>

#include "edgert/status.hpp"

namespace edgert {

struct MemoryBudget {
  explicit MemoryBudget(size_t bytes) : limit(bytes) {}
  const size_t limit;
  std::atomic<size_t> held{0};  // bytes of the run's allocations still alive
  // What the refused allocation asked for, and what the run held then.
  size_t refused_bytes = 0;
  size_t held_when_refused = 0;
};

// Thrown by the tensor allocator when the budget refuses; Program::run reports it.
class MemoryLimitReached : public std::bad_alloc {
 public:
  const char* what() const noexcept override { return "the run's memory limit is reached"; }
};

// Makes `budget` the one the calling thread's tensor allocations count against, while the
// scope lasts (then the one before it again).
class MemoryBudgetScope {
 public:
  explicit MemoryBudgetScope(std::shared_ptr<MemoryBudget> budget);
  ~MemoryBudgetScope();
  MemoryBudgetScope(const MemoryBudgetScope&) = delete;
  MemoryBudgetScope& operator=(const MemoryBudgetScope&) = delete;

 private:
  std::shared_ptr<MemoryBudget> saved_;
};

// EDGERT_MEMORY_LIMIT's value: bytes, or a whole number of KiB, MiB, GiB or TiB with the
// suffix K, M, G or T ("512M"); unset, empty or 0: no limit. Anything else is an error.
Status memory_limit_from_environment(size_t& bytes);
Status parse_memory_limit(const std::string& text, size_t& bytes);

}  // namespace edgert
