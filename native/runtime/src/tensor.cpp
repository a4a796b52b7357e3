// Tensors: dtype helpers, owned and viewed storage, contiguous copies.
#include "edgert/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#if !defined(_WIN32)
#if !defined(_WIN32)
#include <pthread.h>
#endif
#endif
#include <new>
#include <stdexcept>
#include <utility>
#include <vector>

#include "edgert/runtime.hpp"
#include "memory_limit.hpp"

namespace edgert {
namespace {

constexpr size_t kAlignment = 64;

// Large blocks are kept for reuse when released: a program's values are freed at the start
// of each run and allocated again at the same sizes, and a block handed back to the system
// costs a page fault per 4 KiB when it is touched again. Bounded (kCacheBytes idle in all),
// exact sizes only, one lock; blocks are zeroed when handed out as they were when new.
constexpr size_t kCacheMinimum = size_t{64} << 10;
constexpr size_t kCacheBytes = size_t{64} << 20;
constexpr size_t kCacheBlocks = 64;

struct BlockCache {
  std::mutex mutex;
  std::vector<std::pair<size_t, void*>> blocks;  // (size, memory), most recent last
  size_t bytes = 0;

  void* take(size_t nbytes) {
    std::lock_guard<std::mutex> lock(mutex);
    for (size_t i = blocks.size(); i-- > 0;) {
      if (blocks[i].first == nbytes) {
        void* memory = blocks[i].second;
        blocks.erase(blocks.begin() + static_cast<std::ptrdiff_t>(i));
        bytes -= nbytes;
        return memory;
      }
    }
    return nullptr;
  }

  void give(void* memory, size_t nbytes) {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (nbytes <= kCacheBytes) {
        while (!blocks.empty() && (bytes + nbytes > kCacheBytes || blocks.size() >= kCacheBlocks)) {
          ::operator delete(blocks.front().second, std::align_val_t(kAlignment));
          bytes -= blocks.front().first;
          blocks.erase(blocks.begin());
        }
        blocks.emplace_back(nbytes, memory);
        bytes += nbytes;
        return;
      }
    }
    ::operator delete(memory, std::align_val_t(kAlignment));
  }
};

BlockCache& block_cache() {
  // Never destroyed: tensors may outlive statics. A fork() while another thread holds the lock
  // would leave the child's copy locked forever: the lock is taken around fork.
  static BlockCache* cache = [] {
    auto* made = new BlockCache();
#if !defined(_WIN32)
    pthread_atfork([] { block_cache().mutex.lock(); }, [] { block_cache().mutex.unlock(); },
                   [] { block_cache().mutex.unlock(); });
#endif
    return made;
  }();
  return *cache;
}

std::shared_ptr<void> allocate_unbudgeted(size_t nbytes, bool zeroed) {
  if (nbytes < kCacheMinimum) {
    void* memory = ::operator new(nbytes == 0 ? 1 : nbytes, std::align_val_t(kAlignment));
    if (zeroed) std::memset(memory, 0, nbytes);
    return std::shared_ptr<void>(memory, [](void* p) { ::operator delete(p, std::align_val_t(kAlignment)); });
  }
  void* memory = block_cache().take(nbytes);
  if (memory == nullptr) memory = ::operator new(nbytes, std::align_val_t(kAlignment));
  if (zeroed) std::memset(memory, 0, nbytes);
  return std::shared_ptr<void>(memory, [nbytes](void* p) { block_cache().give(p, nbytes); });
}

// The budget of the run this thread is in (memory_limit.hpp), or null.
thread_local std::shared_ptr<MemoryBudget> current_budget;

// Memory for a tensor: refused before it is allocated when it would take the run's budget
// past its limit; counted against the budget as long as it lives.
std::shared_ptr<void> allocate(size_t nbytes, bool zeroed) {
  std::shared_ptr<MemoryBudget> budget = current_budget;
  if (!budget) return allocate_unbudgeted(nbytes, zeroed);
  const size_t held = budget->held.load();
  if (nbytes > budget->limit || held > budget->limit - nbytes) {
    budget->refused_bytes = nbytes;
    budget->held_when_refused = held;
    throw MemoryLimitReached();
  }
  std::shared_ptr<void> memory = allocate_unbudgeted(nbytes, zeroed);
  budget->held += nbytes;
  void* data = memory.get();
  // (Should this control block not be allocated, the deleter runs at once: nothing leaks.)
  return std::shared_ptr<void>(data, [memory = std::move(memory), budget, nbytes](void*) mutable {
    budget->held -= nbytes;
    memory.reset();
  });
}

int64_t product(const std::vector<int64_t>& shape) {
  int64_t count = 0;
  if (!checked_element_count(shape, 1, &count)) {
    throw std::length_error("the shape's element count overflows");
  }
  return count;
}

// Copies `element` bytes per item of a strided source into a contiguous destination.
void copy_strided(const char* source, const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                  size_t element, size_t axis, char*& cursor) {
  if (axis == shape.size()) {
    std::memcpy(cursor, source, element);
    cursor += element;
    return;
  }
  for (int64_t i = 0; i < shape[axis]; ++i) {
    copy_strided(source + i * strides[axis] * static_cast<int64_t>(element), shape, strides, element, axis + 1, cursor);
  }
}

}  // namespace

MemoryBudgetScope::MemoryBudgetScope(std::shared_ptr<MemoryBudget> budget) : saved_(std::move(current_budget)) {
  current_budget = std::move(budget);
}

MemoryBudgetScope::~MemoryBudgetScope() {
  current_budget = std::move(saved_);
}

Status parse_memory_limit(const std::string& text, size_t& bytes) {
  bytes = 0;
  if (text.empty()) return Status::success();
  size_t digits = text.size();
  unsigned shift = 0;
  switch (text.back()) {
    case 'k':
    case 'K': shift = 10; break;
    case 'm':
    case 'M': shift = 20; break;
    case 'g':
    case 'G': shift = 30; break;
    case 't':
    case 'T': shift = 40; break;
    default: break;
  }
  if (shift != 0) --digits;
  bool valid = digits > 0 && digits <= 19;  // 19 digits always fit in 64 bits
  uint64_t value = 0;
  for (size_t i = 0; valid && i < digits; ++i) {
    valid = text[i] >= '0' && text[i] <= '9';
    value = value * 10 + static_cast<uint64_t>(text[i] - '0');
  }
  if (!valid || value > (static_cast<uint64_t>(std::numeric_limits<size_t>::max()) >> shift)) {
    return Status(Code::InvalidArgument,
                  "EDGERT_MEMORY_LIMIT is '" + text.substr(0, 40) +
                      "', not a byte count (a whole number of bytes, or of KiB, MiB, GiB or TiB with the suffix "
                      "K, M, G or T, e.g. 512M; 0 or empty: no limit)");
  }
  bytes = static_cast<size_t>(value << shift);
  return Status::success();
}

Status memory_limit_from_environment(size_t& bytes) {
  const char* text = std::getenv("EDGERT_MEMORY_LIMIT");
  return parse_memory_limit(text ? text : "", bytes);
}

bool checked_element_count(const std::vector<int64_t>& shape, size_t element_size, int64_t* count) {
  int64_t total = 1;
  for (int64_t dim : shape) {
    if (__builtin_mul_overflow(total, dim < 0 ? 0 : dim, &total)) return false;
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(total, static_cast<int64_t>(element_size), &bytes) || bytes > kMaxTensorBytes) {
    return false;
  }
  *count = total;
  return true;
}

size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::Float32: return 4;
    case DType::Int8: return 1;
    case DType::UInt8: return 1;
    case DType::Int32: return 4;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
  }
  return 0;
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Int8: return "int8";
    case DType::UInt8: return "uint8";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
  }
  return "unknown";
}

bool dtype_is_valid(uint32_t raw) {
  return raw <= static_cast<uint32_t>(DType::Bool);
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  strides_ = contiguous_strides(shape_);
  int64_t count = 0;
  if (!checked_element_count(shape_, dtype_size(dtype_), &count)) {
    throw std::length_error("a tensor of this shape would exceed 2^48 bytes");
  }
  storage_ = allocate(static_cast<size_t>(count) * dtype_size(dtype_), /*zeroed=*/true);
  data_ = storage_.get();
}

Tensor Tensor::uninitialized(DType dtype, std::vector<int64_t> shape) {
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.shape_ = std::move(shape);
  tensor.strides_ = contiguous_strides(tensor.shape_);
  int64_t count = 0;
  if (!checked_element_count(tensor.shape_, dtype_size(dtype), &count)) {
    throw std::length_error("a tensor of this shape would exceed 2^48 bytes");
  }
  tensor.storage_ = allocate(static_cast<size_t>(count) * dtype_size(dtype), /*zeroed=*/false);
  tensor.data_ = tensor.storage_.get();
  return tensor;
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides, void* data,
                    std::shared_ptr<void> keep_alive) {
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.strides_ = strides.size() == shape.size() ? std::move(strides) : contiguous_strides(shape);
  tensor.shape_ = std::move(shape);
  tensor.storage_ = std::move(keep_alive);
  tensor.data_ = data;
  return tensor;
}

int64_t Tensor::size(int64_t axis) const {
  if (axis < 0) axis += dim();
  return axis >= 0 && axis < dim() ? shape_[static_cast<size_t>(axis)] : 0;
}

int64_t Tensor::numel() const {
  return product(shape_);
}

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor copy(dtype_, shape_);
  if (copy.numel() == 0) return copy;
  char* cursor = static_cast<char*>(copy.data());
  copy_strided(static_cast<const char*>(data_), shape_, strides_, dtype_size(dtype_), 0, cursor);
  return copy;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
  if (!is_contiguous() || product(shape) != numel()) return Tensor();
  Tensor result = *this;
  result.strides_ = contiguous_strides(shape);
  result.shape_ = std::move(shape);
  return result;
}

std::vector<int64_t> Tensor::contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    if (__builtin_mul_overflow(stride, shape[i] < 1 ? 1 : shape[i], &stride)) {
      throw std::length_error("the shape's strides overflow");
    }
  }
  return strides;
}

}  // namespace edgert
