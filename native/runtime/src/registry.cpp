// The operator and backend registries: thread-safe tables keyed by name. Registering a name
// twice is a packaging error (two copies of one component in a process): it aborts.
#if defined(_WIN32)
#include <windows.h>
#else
#include <dlfcn.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <string>

#include "edgert/registry.hpp"
#include "registry_internal.hpp"

namespace edgert {
namespace {

template <class Item>
struct Registered {
  Item item;
  std::string owner;
};

template <class Item>
class Table {
 public:
  void add(const char* kind, const std::string& name, Item item, const void* address) {
    std::string owner = owner_of(address);
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(name);
    if (found != entries_.end()) abort_duplicate(kind, name, found->second.owner, owner);
    entries_.emplace(name, Registered<Item>{item, std::move(owner)});
  }

  Item find(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(name);
    return found == entries_.end() ? Item{} : found->second.item;
  }

  std::vector<OperatorEntry> list() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<OperatorEntry> result;
    for (const auto& [name, entry] : entries_) result.push_back({name, entry.owner});
    return result;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

  // Map nodes are stable and never erased: the pointers outlive the lock.
  const std::pair<const std::string, Registered<Item>>* at(size_t index) const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (index >= entries_.size()) return nullptr;
    return &*std::next(entries_.begin(), static_cast<std::ptrdiff_t>(index));
  }

 private:
  // The file of the library that holds ``address`` (the registering function), for the
  // duplicate-registration message.
  static std::string owner_of(const void* address) {
#if defined(_WIN32)
    HMODULE module = nullptr;
    char name[1024];
    if (address != nullptr &&
        GetModuleHandleExA(GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT,
                           static_cast<LPCSTR>(address), &module) != 0) {
      DWORD length = GetModuleFileNameA(module, name, sizeof(name));
      if (length > 0 && length < sizeof(name)) return std::string(name, length);
    }
    return "";
#else
    Dl_info info{};
    if (address != nullptr && dladdr(address, &info) != 0 && info.dli_fname != nullptr) {
      return info.dli_fname;
    }
    return "";
#endif
  }

  [[noreturn]] static void abort_duplicate(const char* kind, const std::string& name, const std::string& first,
                                           const std::string& second) {
    std::fprintf(stderr,
                 "Re-registering %s (%s): first registered by %s, registered again by %s. "
                 "Two copies of one edgert component are loaded in this process; link the "
                 "shared component library instead of carrying a copy.\n",
                 name.c_str(), kind, first.empty() ? "<unknown>" : first.c_str(),
                 second.empty() ? "<unknown>" : second.c_str());
    std::fflush(stderr);
    std::abort();
  }

  mutable std::mutex mutex_;
  std::map<std::string, Registered<Item>> entries_;
};

// Leaked on purpose: registrations happen from static initializers of other libraries and
// lookups may happen during their static destruction.
struct OperatorFunctions {
  KernelFn kernel = nullptr;
  PrepareFn prepare = nullptr;
};

Table<OperatorFunctions>& operators() {
  static auto* table = new Table<OperatorFunctions>();
  return *table;
}

Table<Backend*>& backends() {
  static auto* table = new Table<Backend*>();
  return *table;
}

}  // namespace

Backend::~Backend() = default;
Prepared::~Prepared() = default;

namespace {

// The default preparation: nothing kept, the backend's run() each time.
class Unprepared final : public Prepared {
 public:
  Unprepared(Backend& backend, const Graph& graph, size_t first, size_t count)
      : backend_(backend), graph_(graph), first_(first), count_(count) {}
  Status run(std::vector<Tensor>& values) override { return backend_.run(graph_, first_, count_, values); }

 private:
  Backend& backend_;
  const Graph& graph_;
  size_t first_;
  size_t count_;
};

}  // namespace

Status Backend::prepare(const Graph& graph, size_t first, size_t count, std::unique_ptr<Prepared>& prepared) {
  prepared = std::make_unique<Unprepared>(*this, graph, first, count);
  return Status::success();
}

bool register_operator(const char* name, KernelFn kernel) {
  return register_operator(name, kernel, nullptr);
}

bool register_operator(const char* name, KernelFn kernel, PrepareFn prepare) {
  operators().add("operator", name ? name : "", OperatorFunctions{kernel, prepare},
                  reinterpret_cast<const void*>(kernel));
  return true;
}

KernelFn find_operator(const std::string& name) {
  return operators().find(name).kernel;
}

PrepareFn find_operator_prepare(const std::string& name) {
  return operators().find(name).prepare;
}

std::vector<OperatorEntry> list_operators() {
  return operators().list();
}

bool register_backend(Backend* backend) {
  if (backend == nullptr) return false;
  backends().add("backend", backend->name(), backend, static_cast<const void*>(backend));
  return true;
}

Backend* find_backend(const std::string& name) {
  return backends().find(name);
}

std::vector<OperatorEntry> list_backends() {
  return backends().list();
}

namespace registry {

size_t operator_count() {
  return operators().size();
}
const char* operator_name(size_t index) {
  auto* entry = operators().at(index);
  return entry ? entry->first.c_str() : nullptr;
}
const char* operator_owner(size_t index) {
  auto* entry = operators().at(index);
  return entry ? entry->second.owner.c_str() : nullptr;
}
size_t backend_count() {
  return backends().size();
}
const char* backend_name(size_t index) {
  auto* entry = backends().at(index);
  return entry ? entry->first.c_str() : nullptr;
}
const char* backend_owner(size_t index) {
  auto* entry = backends().at(index);
  return entry ? entry->second.owner.c_str() : nullptr;
}

}  // namespace registry
}  // namespace edgert
