// edgert C++ API. Consumers link edgert::runtime plus the kernel components they need.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "edgert/export.h"
#include "edgert/graph.hpp"
#include "edgert/registry.hpp"
#include "edgert/status.hpp"
#include "edgert/tensor.hpp"

namespace edgert {

EDGERT_API const char* version();

// Parses the binary program format (docs/program-format.md). Never trusts the bytes: every
// size, index, dtype and shape is checked before use, and allocations are bounded by the
// input size. The graph's constants are copies: `data` may go away afterwards.
EDGERT_API Status parse_program(const void* data, size_t size, Graph& graph);

// The checksum a version-2 program file stores at byte 24: the CRC-32 (zlib's polynomial) of
// every byte of the file except the four of the checksum field itself (docs/program-format.md).
EDGERT_API uint32_t program_checksum(const void* data, size_t size);

// The note a loaded program of this format version deserves ("" for the current version): a
// version-1 file carries no checksum. The C API reports it through edgert_last_warning().
EDGERT_API std::string format_note(uint32_t format_version);

// Where a program's constants live (docs/program-format.md, "Loading").
enum class ConstantStorage : uint8_t {
  Copied = 0,    // one copy owned by the program (load_bytes, small or unmappable files)
  Mapped = 1,    // views into a read-only mapping of the file (load_file)
  Borrowed = 2,  // views into the caller's bytes (load_borrowed)
};

// What the executor's memory plan did in the last run (docs/operators.md, "Memory"). Bytes
// are those of tensor data: a value that is a view of another (reshape, squeeze, a
// contiguous slice) or of an input or constant adds only memory no other value covers.
struct MemoryPlan {
  // Most bytes held at once by values the run computed (node outputs, graph outputs
  // included), measured after each step has written its outputs and before the values it
  // was the last reader of are released. Kernels' scratch memory inside a step and freed
  // blocks kept for reuse by the allocator are not counted.
  size_t peak_bytes = 0;
  size_t input_bytes = 0;      // the inputs bound for the last run
  size_t output_bytes = 0;     // the last run's outputs
  size_t constant_bytes = 0;   // the program's constants (however they are stored)
  size_t released_values = 0;  // values each run releases as soon as their last reader ran
  ConstantStorage constants = ConstantStorage::Copied;
};

class EDGERT_API Program {
 public:
  // Not copyable: each step's context points into this program's own values.
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;

  // Loading and running never throw for bad input: sizes that overflow are InvalidProgram
  // (load) or InvalidArgument (run), allocation failures OutOfMemory.
  //
  // load_file maps the file read-only (private, copy-on-write) and makes the constants views
  // into the mapping, which stays mapped while any of them lives; a file below
  // kCopyFilesBelow bytes, or one that cannot be mapped (a pipe), is read into memory
  // instead. While mapped, the file must not be truncated or rewritten in place (replace it
  // by renaming a new file over it): docs/program-format.md, "Loading".
  static Status load_file(const std::string& path, std::unique_ptr<Program>& program);
  // Copies the bytes once; the constants are views into that copy.
  static Status load_bytes(const void* data, size_t size, std::unique_ptr<Program>& program);
  // Reads the constants in place from the caller's bytes, which must stay unchanged. Every
  // constant holds `keep_alive`, so it is released when the program and every tensor taken
  // from it are gone; with a null `keep_alive` the caller keeps `data` valid until then.
  // Bytes that are not 16-byte aligned are copied (load_bytes).
  static Status load_borrowed(const void* data, size_t size, std::shared_ptr<const void> keep_alive,
                              std::unique_ptr<Program>& program);
  static constexpr size_t kCopyFilesBelow = size_t{1} << 20;

  const Graph& graph() const { return graph_; }
  size_t input_count() const { return graph_.inputs.size(); }
  size_t output_count() const { return graph_.outputs.size(); }

  // Backend names tried in order; an empty list runs only the plain kernels.
  Status set_backends(const std::vector<std::string>& names);
  void use_default_backends();

  // Binds an input. A view (Tensor::view) is read in place, not copied: its memory must stay
  // valid and unchanged until the input is bound again or release_values() is called.
  Status set_input(size_t index, Tensor tensor);
  // The most bytes of tensor memory a run may hold at once (0: no limit, the default unless
  // EDGERT_MEMORY_LIMIT was set when the program was loaded). Every tensor the running
  // thread allocates during run() counts (node outputs, graph outputs included, and the
  // tensors kernels and backends allocate for themselves) while it lives; an allocation that
  // would take the count past the limit is refused before it is made, and run() fails with
  // OutOfMemory giving the bytes the run needed and the limit. The bound inputs and the
  // constants are not counted, nor memory a kernel takes other than as tensors, nor memory
  // of a device (docs/operators.md, "Memory limit").
  void set_memory_limit(size_t bytes) { memory_limit_ = bytes; }
  size_t memory_limit() const { return memory_limit_; }
  Status run();
  const Tensor& output(size_t index) const;
  // Drops the bound inputs and the last run's outputs: afterwards the program holds no
  // memory of a run (and no reference to memory bound with set_input).
  void release_values();

  // An output handed over by take_outputs.
  struct Output {
    Tensor tensor;
    // No input, constant or other output shares its memory, and the program keeps none of
    // it: whoever holds it may write it.
    bool exclusive = false;
  };
  // Hands the last run's outputs over, then release_values(). An output sharing memory with
  // an input (an input passed through or reshaped) is copied first, since inputs may be views
  // of memory that is the caller's only for the run.
  std::vector<Output> take_outputs();
  size_t delegated_nodes(const std::string& backend) const;
  const MemoryPlan& memory_plan() const { return memory_; }
  // With EDGERT_PROFILE set, a program times each step of every run after its first (which
  // prepares the kernels) and writes where the time went to stderr when destroyed.
  ~Program();

 private:
  Program() = default;
  static Status load_checked(const void* data, size_t size, std::shared_ptr<const void> keep_alive,
                             ConstantStorage storage, std::unique_ptr<Program>& program);
  Status run_checked();
  Status memory_limit_status(size_t needed, size_t requested) const;
  Status run_step(size_t index);
  Status plan();
  void adopt_constants(ConstantStorage storage);
  void plan_contexts();
  void plan_releases();
  void discard_computed_values();
  void account_step(size_t index);
  size_t live_bytes();
  void measure_constants();
  void mark_shared_outputs(std::vector<Output>& outputs);
  Tensor take_output_value(size_t index, const std::vector<Output>& outputs);

  struct Step {
    Backend* backend = nullptr;  // null: run node `first` with its kernel
    size_t first = 0;
    size_t count = 1;
    KernelFn kernel = nullptr;
    PrepareFn prepare_kernel = nullptr;        // the kernel's prepare function, or null
    bool kernel_prepared = false;              // prepare_kernel ran (on the first run)
    std::shared_ptr<const void> kernel_state;  // what it made (may be null)
    std::shared_ptr<Prepared> prepared;        // the backend's state for these nodes
    // A kernel step's context, made when planned (its inputs point into values_) and its
    // outputs, so a run allocates nothing of its own around the kernel.
    KernelContext context;
    std::vector<Tensor> outputs;
    std::vector<int32_t> writes;    // values the step's nodes produce
    std::vector<int32_t> releases;  // values whose last reader is this step
    size_t delegated_slot = 0;      // index into delegated_ (backend steps)
  };

  Graph graph_;
  std::vector<Tensor> values_;
  std::vector<Step> steps_;
  std::vector<std::string> backend_names_;
  bool default_backends_ = true;
  bool planned_ = false;
  std::vector<std::pair<std::string, size_t>> delegated_;       // per backend of the plan
  std::vector<int32_t> computed_;                               // every value some node produces
  std::vector<int32_t> computed_outputs_;                       // the graph outputs among them
  std::vector<int32_t> live_;                                   // computed values held now (during a run)
  using Ranges = std::vector<std::pair<uintptr_t, uintptr_t>>;  // [begin, end) of memory
  Ranges ranges_;                                               // scratch of live_bytes()
  Ranges constant_ranges_;                                      // the constants' memory, merged
  Ranges input_ranges_;                                         // the bound inputs' memory, merged (each run)
  MemoryPlan memory_;
  size_t memory_limit_ = 0;  // bytes; 0: none
  size_t running_step_ = 0;  // the step run() is in (steps_.size(): none)
  // EDGERT_PROFILE (program_profile.cpp): per step, the seconds of the runs after the first
  // (empty: not profiling), and those runs' count.
  std::vector<double> step_seconds_;
  std::vector<std::string> step_shapes_;  // "input 0's shape -> output 0's shape", last run
  size_t profiled_runs_ = 0;
  size_t runs_ = 0;
  Status run_steps();
  void write_profile() const;
};

}  // namespace edgert
