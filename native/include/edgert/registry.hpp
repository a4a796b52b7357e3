// The operator registry and the delegate (backend) registry, both owned by libedgert.
//
// Kernel libraries register operators from static initializers with
// EDGERT_REGISTER_OPERATOR; a second registration of a name aborts the process with
// "Re-registering <name>" and both owners. Every registration also leaves a record in the
// library's `edgert_reg` section (`.edgreg` on Windows), which `python -m release verify`
// reads to build the ownership table without loading anything.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgert/export.h"
#include "edgert/graph.hpp"
#include "edgert/status.hpp"
#include "edgert/tensor.hpp"

namespace edgert {

struct KernelContext {
  const char* op = nullptr;           // the operator being run
  std::vector<const Tensor*> inputs;  // null for an absent optional input
  const Attributes* attributes = nullptr;
  std::vector<Tensor>* outputs = nullptr;  // sized to the node's outputs; the kernel fills them
  // What the operator's prepare function made for this node (null when it has none or it
  // kept nothing). Immutable: several runs, of several programs, may read it at once.
  const void* prepared = nullptr;
};

using KernelFn = Status (*)(KernelContext& context);

// What a kernel sees of a node when a program prepares (on its first run): the constants
// among its inputs (null for a run-time value or an absent input) and its attributes.
struct PrepareContext {
  const char* op = nullptr;
  std::vector<const Tensor*> constants;
  const Attributes* attributes = nullptr;
};

// Computes once per node what every run reuses (weights packed into the layout the kernel
// reads, ...). Leaves `state` null to keep nothing; an error fails the first run, naming the
// node. The state must depend on nothing but the context and own what it holds (no pointer
// into the program's constants): programs holding the same constants and attributes share
// one state, which lives as long as one of them (docs/kernels.md, "Prepared weights").
using PrepareFn = Status (*)(const PrepareContext& context, std::shared_ptr<const void>& state);

struct OperatorEntry {
  std::string name;
  std::string owner;  // path of the shared library that registered it ("" when unknown)
};

// The kind of value an attribute holds: the program format's attribute kinds
// (docs/program-format.md). A Float attribute also takes an Int (2 for 2.0), a Floats one a
// list of ints; nothing else converts.
enum class AttributeKind : uint8_t { Int = 0, Float = 1, String = 2, Ints = 3, Floats = 4 };
EDGERT_API const char* attribute_kind_name(AttributeKind kind);  // "int", "float", "string", "ints", "floats"

// One attribute an operator reads, and its kind.
struct AttributeSpec {
  const char* name;
  AttributeKind kind;
};

// Declares the attributes operator `name` reads (EDGERT_OPERATOR_ATTRIBUTES): loading a
// program refuses a node of the operator that gives one of them a value of another kind
// (InvalidProgram naming the node, the operator, the attribute and the kind expected), so no
// kernel runs with a default in place of a mistaken value. Attributes it does not declare
// are left to the kernel. A second declaration for one name aborts, like a second
// registration. Returns true so it can initialize a static.
EDGERT_API bool register_operator_attributes(const char* name, std::vector<AttributeSpec> attributes = {});
// The attributes operator `name` declared, as "name:kind" pairs joined by commas
// ("axis:int,eps:float"); "" for an operator declaring that it reads none; null when it
// declared nothing. The text lives as long as the process.
EDGERT_API const char* operator_attributes(const std::string& name);
// Ok, or the InvalidProgram error for the first attribute of node `position` whose value is
// not of the kind its operator declared (the loader calls this for every node).
EDGERT_API Status check_attribute_kinds(const Node& node, size_t position);

// Aborts the process on a duplicate name. Returns true so it can initialize a static.
EDGERT_API bool register_operator(const char* name, KernelFn kernel);
EDGERT_API bool register_operator(const char* name, KernelFn kernel, PrepareFn prepare);
EDGERT_API KernelFn find_operator(const std::string& name);           // null when not registered
EDGERT_API PrepareFn find_operator_prepare(const std::string& name);  // null: none
EDGERT_API std::vector<OperatorEntry> list_operators();               // sorted by name

// What a backend keeps for one claimed run of nodes of one program: made once, on the first
// run after the program is planned (fusion decisions, constants moved to a device, buffers,
// streams), used by every later run, destroyed with the program (or when it is planned
// again). Planning (load, set_backends) only claims nodes, so choosing backends before the
// first run moves nothing to a device. The program outlives it, so it may keep references
// into the program's graph.
class EDGERT_API Prepared {
 public:
  virtual ~Prepared();
  // Runs the prepared nodes; reads and writes `values` (indexed by value id).
  virtual Status run(std::vector<Tensor>& values) = 0;
};

// A delegate: takes over runs of consecutive nodes and executes them its own way, with a
// per-program lifecycle: claim when a program is planned, prepare on its first run, run
// many times through the Prepared object, release with the program.
class EDGERT_API Backend {
 public:
  virtual ~Backend();
  virtual const char* name() const = 0;
  // Unavailable (for example no GPU or no driver) with a message saying why; Ok otherwise.
  virtual Status available() const { return Status::success(); }
  // Order among the default backends: higher first, then by name. Device delegates rank
  // above the CPU delegate, so an available GPU takes the nodes it can run.
  virtual int priority() const { return 0; }
  // How many nodes, starting at graph.nodes[first], this backend runs as one unit (0: none).
  virtual size_t claim(const Graph& graph, size_t first) const = 0;
  // Prepares graph.nodes[first, first + count) for repeated runs. The default prepares
  // nothing and calls run() each time, for backends with no per-program state.
  virtual Status prepare(const Graph& graph, size_t first, size_t count, std::unique_ptr<Prepared>& prepared);
  // Runs graph.nodes[first, first + count) without preparation; reads and writes `values`.
  virtual Status run(const Graph& graph, size_t first, size_t count, std::vector<Tensor>& values) = 0;
};

// The backend object must live for the rest of the process. Aborts on a duplicate name.
EDGERT_API bool register_backend(Backend* backend);
EDGERT_API Backend* find_backend(const std::string& name);
EDGERT_API std::vector<OperatorEntry> list_backends();  // name + owning library

}  // namespace edgert

// Registration records: NUL-terminated strings "op:<name>" / "backend:<name>" in a section.
#if defined(__APPLE__)
#define EDGERT_REGISTRATION_SECTION "__DATA,edgert_reg"
#elif defined(_WIN32)
#define EDGERT_REGISTRATION_SECTION ".edgreg"
#else
#define EDGERT_REGISTRATION_SECTION "edgert_reg"
#endif

#define EDGERT_CONCAT_INNER(a, b) a##b
#define EDGERT_CONCAT(a, b) EDGERT_CONCAT_INNER(a, b)

#define EDGERT_REGISTER_OPERATOR(name_literal, kernel)                                         \
  __attribute__((used, section(EDGERT_REGISTRATION_SECTION))) static const char EDGERT_CONCAT( \
      edgert_registration_record_, __LINE__)[] = "op:" name_literal;                           \
  static const bool EDGERT_CONCAT(edgert_registered_, __LINE__) = ::edgert::register_operator(name_literal, kernel)

// An operator with a prepare function (PrepareFn above).
#define EDGERT_REGISTER_PREPARED_OPERATOR(name_literal, kernel, prepare)                       \
  __attribute__((used, section(EDGERT_REGISTRATION_SECTION))) static const char EDGERT_CONCAT( \
      edgert_registration_record_, __LINE__)[] = "op:" name_literal;                           \
  static const bool EDGERT_CONCAT(edgert_registered_, __LINE__) =                              \
      ::edgert::register_operator(name_literal, kernel, prepare)

// The attributes an operator reads and their kinds (register_operator_attributes above):
//   EDGERT_OPERATOR_ATTRIBUTES("edgert::layer_norm", {{"axis", ::edgert::AttributeKind::Int},
//                                                     {"eps", ::edgert::AttributeKind::Float}});
//   EDGERT_OPERATOR_ATTRIBUTES("edgert::add");  // an operator that reads none
#define EDGERT_OPERATOR_ATTRIBUTES(...)                                \
  static const bool EDGERT_CONCAT(edgert_attribute_kinds_, __LINE__) = \
      ::edgert::register_operator_attributes(__VA_ARGS__)

#define EDGERT_REGISTER_BACKEND(name_literal, backend_object)                                  \
  __attribute__((used, section(EDGERT_REGISTRATION_SECTION))) static const char EDGERT_CONCAT( \
      edgert_registration_record_, __LINE__)[] = "backend:" name_literal;                      \
  static const bool EDGERT_CONCAT(edgert_registered_, __LINE__) = ::edgert::register_backend(&(backend_object))
