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
#include <utility>
#include <variant>
#include <vector>

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

  // The entry's item, or null; map nodes are stable and never erased.
  const Item* find_stable(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = entries_.find(name);
    return found == entries_.end() ? nullptr : &found->second.item;
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

// An operator's declared attributes (names copied: the declaring library's literals).
struct AttributeSchema {
  std::vector<std::pair<std::string, AttributeKind>> attributes;
  std::string text;  // "axis:int,eps:float"
};

Table<AttributeSchema>& attribute_schemas() {
  static auto* table = new Table<AttributeSchema>();
  return *table;
}

AttributeKind kind_of(const AttributeValue& value) {
  return static_cast<AttributeKind>(value.index());  // the variant's order is the kinds'
}

bool accepts(AttributeKind declared, AttributeKind given) {
  return declared == given || (declared == AttributeKind::Float && given == AttributeKind::Int) ||
         (declared == AttributeKind::Floats && given == AttributeKind::Ints);
}

const char* kind_with_article(AttributeKind kind) {
  switch (kind) {
    case AttributeKind::Int: return "an int";
    case AttributeKind::Float: return "a float";
    case AttributeKind::String: return "a string";
    case AttributeKind::Ints: return "a list of ints";
    case AttributeKind::Floats: return "a list of floats";
  }
  return "an unknown kind";
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

static_assert(std::variant_size_v<AttributeValue> == 5, "AttributeKind follows AttributeValue's alternatives");

const char* attribute_kind_name(AttributeKind kind) {
  switch (kind) {
    case AttributeKind::Int: return "int";
    case AttributeKind::Float: return "float";
    case AttributeKind::String: return "string";
    case AttributeKind::Ints: return "ints";
    case AttributeKind::Floats: return "floats";
  }
  return "unknown";
}

bool register_operator_attributes(const char* name, std::vector<AttributeSpec> attributes) {
  AttributeSchema schema;
  for (const AttributeSpec& spec : attributes) {
    const std::string attribute = spec.name ? spec.name : "";
    schema.attributes.emplace_back(attribute, spec.kind);
    schema.text += (schema.text.empty() ? "" : ",") + attribute + ":" + attribute_kind_name(spec.kind);
  }
  attribute_schemas().add("operator attributes", name ? name : "", std::move(schema),
                          static_cast<const void*>(name));  // a literal of the declaring library
  return true;
}

const char* operator_attributes(const std::string& name) {
  const AttributeSchema* schema = attribute_schemas().find_stable(name);
  return schema ? schema->text.c_str() : nullptr;
}

Status check_attribute_kinds(const Node& node, size_t position) {
  const AttributeSchema* schema = attribute_schemas().find_stable(node.op);
  if (schema == nullptr) return Status::success();
  for (const auto& [name, declared] : schema->attributes) {
    auto given = node.attributes.all().find(name);
    if (given == node.attributes.all().end()) continue;
    const AttributeKind kind = kind_of(given->second);
    if (accepts(declared, kind)) continue;
    return Status(Code::InvalidProgram, "invalid program: node " + std::to_string(position) + ": " + node.op +
                                            ": attribute " + name + " must be " + kind_with_article(declared) +
                                            ", not " + kind_with_article(kind));
  }
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
