// The process-wide table of prepared kernel state (prepared_cache.hpp).
#include "prepared_cache.hpp"

#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>
#if !defined(_WIN32)
#include <pthread.h>
#endif

namespace edgert {
namespace {

uint64_t mix(uint64_t value) {
  value ^= value >> 33;
  value *= 0xff51afd7ed558ccdULL;
  value ^= value >> 33;
  value *= 0xc4ceb9fe1a85ec53ULL;
  return value ^ (value >> 33);
}

// Two independent 64-bit streams over the bytes, each word multiplied in with its position;
// the seeds come from the process's random device, so inputs cannot be crafted ahead to
// collide with another program's.
struct Digest {
  uint64_t first;
  uint64_t second;
};

const Digest& seeds() {
  static const Digest seeded = [] {
    std::random_device device;
    const uint64_t clock = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return Digest{(uint64_t{device()} << 32 | device()) ^ clock, (uint64_t{device()} << 32 | device()) ^ mix(clock)};
  }();
  return seeded;
}

Digest digest(const void* data, size_t size) {
  Digest state = seeds();
  const auto* bytes = static_cast<const unsigned char*>(data);
  size_t offset = 0;
  for (; offset + 8 <= size; offset += 8) {
    uint64_t word;
    std::memcpy(&word, bytes + offset, 8);
    state.first = mix(state.first ^ word) + offset;
    state.second = (state.second ^ mix(word + 0x9e3779b97f4a7c15ULL * (offset + 1))) * 0x100000001b3ULL;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, bytes + offset, size - offset);
  state.first = mix(state.first ^ tail ^ (uint64_t{size} << 1));
  state.second = mix(state.second ^ mix(tail) ^ size);
  return state;
}

void append(std::string& key, const void* data, size_t size) {
  key.append(static_cast<const char*>(data), size);
}

void append_attributes(std::string& key, const Attributes& attributes) {
  for (const auto& [name, value] : attributes.all()) {
    key += name;
    key += '\0';
    key += static_cast<char>(value.index());
    std::visit(
        [&key](const auto& item) {
          using Item = std::decay_t<decltype(item)>;
          if constexpr (std::is_same_v<Item, std::string>) {
            key += item;
          } else if constexpr (std::is_arithmetic_v<Item>) {
            append(key, &item, sizeof(item));
          } else {
            append(key, item.data(), item.size() * sizeof(item[0]));
          }
        },
        value);
    key += '\0';
  }
}

std::string key_of(const PrepareContext& context) {
  std::string key = context.op ? context.op : "";
  key += '\0';
  if (context.attributes) append_attributes(key, *context.attributes);
  for (const Tensor* constant : context.constants) {
    key += constant ? 'c' : '-';
    if (constant == nullptr) continue;
    key += static_cast<char>(constant->dtype());
    for (int64_t dim : constant->shape()) append(key, &dim, sizeof(dim));
    const Tensor contiguous = constant->contiguous();
    const Digest hashed = digest(contiguous.data(), contiguous.nbytes());
    append(key, &hashed, sizeof(hashed));
  }
  return key;
}

struct Table {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<const void>> entries;
};

Table& table() {
  // Never destroyed (programs may be released during static destruction); a fork while
  // another thread holds the lock would leave the child's copy locked: taken around fork.
  static Table* made = [] {
    auto* created = new Table();
#if !defined(_WIN32)
    pthread_atfork([] { table().mutex.lock(); }, [] { table().mutex.unlock(); }, [] { table().mutex.unlock(); });
#endif
    return created;
  }();
  return *made;
}

}  // namespace

Status prepare_shared(const PrepareContext& context, PrepareFn prepare, std::shared_ptr<const void>& state) {
  const std::string key = key_of(context);
  Table& shared = table();
  {
    std::lock_guard<std::mutex> lock(shared.mutex);
    auto found = shared.entries.find(key);
    if (found != shared.entries.end()) {
      state = found->second.lock();
      if (state) return Status::success();
      shared.entries.erase(found);
    }
  }
  // Prepared outside the lock (it may be long); a concurrent twin prepares too, and the
  // first to finish is the one kept.
  std::shared_ptr<const void> made;
  EDGERT_RETURN_IF_ERROR(prepare(context, made));
  std::lock_guard<std::mutex> lock(shared.mutex);
  std::weak_ptr<const void>& slot = shared.entries[key];
  std::shared_ptr<const void> winner = slot.lock();
  if (!winner && made) slot = made;
  state = winner ? winner : made;
  return Status::success();
}

}  // namespace edgert
