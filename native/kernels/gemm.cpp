// Blocking, packing and threading of the matrix products (gemm.hpp) around the micro-kernels
// of gemm_kernels.cpp.
//
// A product's output is cut into blocks, the units of work on the thread pool: each output
// element belongs to one block, so to one thread. A block runs over k in slices of
// depth_block; for each slice it takes its rows of a and its columns of b as panels (already
// packed, or packed now into the thread's buffers, zero-padded at the edges) and runs the
// micro-kernel over every tile, the right-hand panel outer and the left-hand panels inner
// (the right panel stays in L1 while the left block streams from L2). The sums of one slice
// continue from the previous slice's, so each output still adds its products in increasing
// k. Products of at most four rows stream b once through the RowsKernels instead.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <type_traits>

#include "activation.hpp"
#include "common.hpp"
#include "edgert/threadpool.h"
#include "gemm.hpp"
#include "gemm_kernels.hpp"
#include "linear.hpp"
#include "simd.hpp"

namespace edgert::kernels {
namespace {

// Multiply-adds below which a share of the work is not worth another thread.
constexpr int64_t kParallelProducts = int64_t{1} << 18;
// A stored b used by several blocks of rows is packed once, before them, up to this size.
constexpr int64_t kPackedRightLimit = int64_t{64} << 20;
// Blocks per thread the work is cut into when it is large enough: a thread that starts late
// or shares its core with other work takes fewer.
constexpr int64_t kBlocksPerThread = 4;

// Threads worth giving a product of `products` multiply-adds, of those a region begun now
// gets (edgert_threadpool_available: fewer than the pool's size while other programs'
// regions run). The result does not depend on it: each output is one thread's, its products
// added in increasing k whatever the blocks.
int64_t threads_for(int64_t products) {
  return std::min(static_cast<int64_t>(edgert_threadpool_available()),
                  std::max<int64_t>(1, products / kParallelProducts));
}

int64_t round_up(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

int64_t ceil_div(int64_t value, int64_t divisor) {
  return (value + divisor - 1) / divisor;
}

// Float scratch memory, 64-byte aligned, from the runtime's cache of large buffers.
class Scratch {
 public:
  Scratch() = default;
  // No memory for no floats (data() is then null): a product whose operands are all in
  // panels already allocates nothing.
  explicit Scratch(int64_t floats) {
    if (floats > 0) storage_ = Tensor::uninitialized(DType::Float32, {floats});
  }
  float* data() { return storage_.data_as<float>(); }

 private:
  Tensor storage_;
};

// ---------------------------------------------------------------- packing

// target[p * target_stride + i] = source[i * source_stride + p] for i < rows, p < depth;
// in 8×8 blocks where the kernel has a transpose.
void copy_transposed(const MicroKernel& kernel, const float* source, int64_t source_stride, int64_t rows, int64_t depth,
                     float* target, int64_t target_stride) {
  int64_t i = 0;
  if (kernel.transpose8 != nullptr) {
    for (; i + 8 <= rows; i += 8) {
      int64_t p = 0;
      for (; p + 8 <= depth; p += 8) {
        kernel.transpose8(source + i * source_stride + p, source_stride, target + p * target_stride + i, target_stride);
      }
      for (int64_t r = i; r < i + 8; ++r) {
        for (int64_t q = p; q < depth; ++q) target[q * target_stride + r] = source[r * source_stride + q];
      }
    }
  }
  for (; i < rows; ++i) {
    for (int64_t p = 0; p < depth; ++p) target[p * target_stride + i] = source[i * source_stride + p];
  }
}

// Zeros in lanes [valid, width) of each of the depth steps of a panel `width` wide.
void pad_panel(float* panel, int64_t depth, int64_t valid, int64_t width) {
  if (valid == width) return;
  for (int64_t p = 0; p < depth; ++p) std::fill(panel + p * width + valid, panel + (p + 1) * width, 0.0f);
}

// Rows [row, row + rows) of a [., stride] over k [depth_begin, depth_begin + depth) as left
// panels of the kernel's height, p-major, zero-padded: panel q at packed + q * depth * height.
void pack_left_block(const MicroKernel& kernel, const float* a, int64_t stride, int64_t row, int64_t rows,
                     int64_t depth_begin, int64_t depth, float* packed) {
  const int64_t height = kernel.rows;
  for (int64_t panel = 0; panel < rows; panel += height) {
    float* out = packed + panel * depth;
    const int64_t valid = std::min(height, rows - panel);
    copy_transposed(kernel, a + (row + panel) * stride + depth_begin, stride, valid, depth, out, height);
    pad_panel(out, depth, valid, height);
  }
}

// Where a stored b lies and how (the entry's b, its layout, n and k).
struct StoredRight {
  const float* b;
  RightLayout layout;
  int64_t n, k;
};

// Columns [column, column + columns) of a stored b over k [depth_begin, depth_begin + depth)
// as right panels of the kernel's width (RightPacker's layout).
void pack_right_block(const MicroKernel& kernel, const StoredRight& right, int64_t column, int64_t columns,
                      int64_t depth_begin, int64_t depth, float* packed) {
  const int64_t width = kernel.columns;
  for (int64_t panel = 0; panel < columns; panel += width) {
    float* out = packed + panel * depth;
    const int64_t valid = std::min(width, columns - panel);
    const int64_t first = column + panel;
    if (right.layout == RightLayout::KByN) {
      const float* source = right.b + depth_begin * right.n + first;
      if (valid == 16 && width == 16) {  // a fixed-size copy the compiler inlines, not a call
        for (int64_t p = 0; p < depth; ++p) std::memcpy(out + p * 16, source + p * right.n, 16 * sizeof(float));
        continue;
      }
      for (int64_t p = 0; p < depth; ++p) {
        std::memcpy(out + p * width, source + p * right.n, static_cast<size_t>(valid) * sizeof(float));
        std::fill(out + p * width + valid, out + (p + 1) * width, 0.0f);
      }
      continue;
    }
    copy_transposed(kernel, right.b + first * right.k + depth_begin, right.k, valid, depth, out, width);
    pad_panel(out, depth, valid, width);
  }
}

// ---------------------------------------------------------------- the epilogue

// out[r][j] = activation(out[r][j] + bias[j] + row_bias[r]) for `rows` rows `stride` apart
// (bias and row_bias each optional), vectorized in one pass: per element the same IEEE
// operations, in the same order, as one element at a time, and the activation operator's own
// vector code (activation.hpp).
void finish_rows(const GemmEpilogue& epilogue, const float* bias, const float* row_bias, float* c, int64_t stride,
                 int64_t rows, int64_t count) {
  if (bias == nullptr && row_bias == nullptr && epilogue.activation.kind == Activation::None) return;
  const float low = epilogue.activation.min, high = epilogue.activation.max;
  with_activation(epilogue.activation.kind, [&](auto kind) {
    simd::dispatch([&](auto width) {
      using V = typename decltype(width)::Float;
      constexpr int64_t kLanes = decltype(width)::lanes;
      for (int64_t r = 0; r < rows; ++r) {
        float* out = c + r * stride;
        const auto finish = [&](const V& value, int64_t i, int64_t lanes) {
          V v = value;
          if (bias) v = v + (lanes == kLanes ? simd::load<V>(bias + i) : simd::load_partial<V>(bias + i, lanes));
          if (row_bias) v = v + simd::splat<V>(row_bias[r]);
          return activate<decltype(kind)::value>(v, low, high);
        };
        int64_t i = 0;
        for (; i + kLanes <= count; i += kLanes) simd::store(out + i, finish(simd::load<V>(out + i), i, kLanes));
        if (i < count) {
          const int64_t rest = count - i;
          simd::store_partial(out + i, rest, finish(simd::load_partial<V>(out + i, rest), i, rest));
        }
      }
    });
  });
}

// ---------------------------------------------------------------- the problem

struct Problem {
  const std::vector<GemmOperands>& batch;
  int64_t m, n, k;
  RightLayout layout;
  GemmEpilogue epilogue;
  const MicroKernel& kernel;
  const RightPacker* packer = nullptr;  // when set, b comes from it
  bool left_packed = false;             // the entries carry packed_a
  bool right_packed = false;            // the entries carry packed_b
  // Threads the blocks are cut for (choose_blocks): the pool's threads free when the product
  // begins, since a caller sharing the pool with other programs gets only those.
  int64_t threads = 1;
  // Blocks of work: row_block × column_block outputs of one entry.
  int64_t row_block = 0, column_block = 0;
  int64_t row_blocks = 0, column_blocks = 0;

  int64_t blocks() const { return static_cast<int64_t>(batch.size()) * row_blocks * column_blocks; }
  int64_t products() const { return m * n * std::max<int64_t>(k, 1) * static_cast<int64_t>(batch.size()); }
};

// One block of one entry's output.
struct Block {
  const GemmOperands& operands;
  size_t entry;
  int64_t row, rows, column, columns;
};

Block block_at(const Problem& problem, int64_t index) {
  const int64_t per_entry = problem.row_blocks * problem.column_blocks;
  const size_t entry = static_cast<size_t>(index / per_entry);
  const int64_t row = index % per_entry / problem.column_blocks * problem.row_block;
  const int64_t column = index % problem.column_blocks * problem.column_block;
  return Block{problem.batch[entry],
               entry,
               row,
               std::min(problem.row_block, problem.m - row),
               column,
               std::min(problem.column_block, problem.n - column)};
}

// A k slice of panels: panel q at data + q * stride.
struct Panels {
  const float* data;
  int64_t stride;
};

// A thread's buffers for the panels it packs itself.
struct Buffers {
  Scratch left, right;
  Buffers(const Problem& problem, int64_t depth)
      : left(problem.left_packed ? 0 : round_up(problem.row_block, problem.kernel.rows) * depth),
        right(problem.right_packed ? 0 : round_up(problem.column_block, problem.kernel.columns) * depth) {}
};

// The block's rows of a over one k slice: where they lie already, or packed now.
Panels left_panels(const Problem& problem, const Block& block, int64_t depth_begin, int64_t depth, Buffers& buffers) {
  const int64_t height = problem.kernel.rows;
  if (problem.left_packed) {
    const float* panels = block.operands.packed_a + block.row / height * problem.k * height;
    return {panels + depth_begin * height, problem.k * height};
  }
  pack_left_block(problem.kernel, block.operands.a, problem.k, block.row, block.rows, depth_begin, depth,
                  buffers.left.data());
  return {buffers.left.data(), depth * height};
}

// The block's columns of b over one k slice: where they lie already, or packed now.
Panels right_panels(const Problem& problem, const Block& block, int64_t depth_begin, int64_t depth, Buffers& buffers) {
  const int64_t width = problem.kernel.columns;
  if (problem.right_packed) {
    const float* panels = block.operands.packed_b + block.column / width * problem.k * width;
    return {panels + depth_begin * width, problem.k * width};
  }
  float* packed = buffers.right.data();
  if (problem.packer != nullptr) {
    problem.packer->pack(problem.packer->context, block.entry, depth_begin, depth, block.column, block.columns, width,
                         packed);
  } else {
    const StoredRight stored{block.operands.b, problem.layout, problem.n, problem.k};
    pack_right_block(problem.kernel, stored, block.column, block.columns, depth_begin, depth, packed);
  }
  return {packed, depth * width};
}

// A tile on the edge of the output (rows or columns short of the kernel's): computed into
// a full-size scratch tile, the half-height kernel when the rows fit it.
void run_edge_tile(const MicroKernel& kernel, int64_t depth, const float* a, const float* b, float* c, int64_t ldc,
                   int64_t rows, int64_t columns, bool accumulate) {
  alignas(64) float scratch[32 * 32];
  for (int64_t i = 0; i < rows && accumulate; ++i) {
    std::memcpy(scratch + i * kernel.columns, c + i * ldc, static_cast<size_t>(columns) * sizeof(float));
  }
  const TileKernel tile = rows <= kernel.rows / 2 ? kernel.half_tile : kernel.tile;
  tile(depth, a, b, scratch, kernel.columns, accumulate);
  for (int64_t i = 0; i < rows; ++i) {
    std::memcpy(c + i * ldc, scratch + i * kernel.columns, static_cast<size_t>(columns) * sizeof(float));
  }
}

// Every tile of the block for one k slice: right panels outer, left panels inner.
void multiply_slice(const Problem& problem, const Block& block, const Panels& left, const Panels& right, int64_t depth,
                    bool accumulate) {
  const MicroKernel& kernel = problem.kernel;
  for (int64_t jr = 0; jr < block.columns; jr += kernel.columns) {
    const int64_t columns = std::min<int64_t>(kernel.columns, block.columns - jr);
    const float* b = right.data + jr / kernel.columns * right.stride;
    for (int64_t ir = 0; ir < block.rows; ir += kernel.rows) {
      const int64_t rows = std::min<int64_t>(kernel.rows, block.rows - ir);
      const float* a = left.data + ir / kernel.rows * left.stride;
      float* c = block.operands.c + (block.row + ir) * problem.n + block.column + jr;
      if (rows == kernel.rows && columns == kernel.columns) {
        kernel.tile(depth, a, b, c, problem.n, accumulate);
      } else {
        run_edge_tile(kernel, depth, a, b, c, problem.n, rows, columns, accumulate);
      }
    }
  }
}

void finish_block(const Problem& problem, const Block& block) {
  const GemmEpilogue& epilogue = problem.epilogue;
  float* c = block.operands.c + block.row * problem.n + block.column;
  if (problem.k == 0) {
    for (int64_t i = 0; i < block.rows; ++i) std::fill(c + i * problem.n, c + i * problem.n + block.columns, 0.0f);
  }
  finish_rows(epilogue, epilogue.bias ? epilogue.bias + block.column : nullptr,
              block.operands.row_bias ? block.operands.row_bias + block.row : nullptr, c, problem.n, block.rows,
              block.columns);
}

// The length of the k slices: k cut into as few slices of at most depth_block as it takes,
// of about equal length (a multiple of 8, the transposes' blocks), so that no slice is a
// short remainder whose tiles spend their time loading and storing c.
int64_t slice_depth(const MicroKernel& kernel, int64_t k) {
  const int64_t slices = std::max<int64_t>(1, ceil_div(k, kernel.depth_block));
  return std::min(kernel.depth_block, round_up(ceil_div(k, slices), 8));
}

void run_block(const Problem& problem, int64_t index, Buffers& buffers) {
  const Block block = block_at(problem, index);
  const int64_t slice = slice_depth(problem.kernel, problem.k);
  for (int64_t p = 0; p < problem.k; p += slice) {
    const int64_t depth = std::min(slice, problem.k - p);
    const Panels right = right_panels(problem, block, p, depth, buffers);
    const Panels left = left_panels(problem, block, p, depth, buffers);
    multiply_slice(problem, block, left, right, depth, p > 0);
  }
  finish_block(problem, block);
}

// Every block of every product, on the pool: each pool thread takes blocks from an atomic
// counter until none are left. A block, and so each output, is computed by one thread.
void run_blocks(const Problem& problem) {
  const int64_t blocks = problem.blocks();
  const int64_t threads = std::min(problem.threads, blocks);
  const int64_t depth = std::min(problem.k, slice_depth(problem.kernel, problem.k));
  std::atomic<int64_t> next{0};
  // through the pool even on one thread, so the pool sees this program while it runs
  run_on_pool(0, threads, 1, [&](int64_t, int64_t) {
    Buffers buffers(problem, depth);
    for (int64_t index = next++; index < blocks; index = next++) run_block(problem, index, buffers);
  });
}

// Cuts `extent` (rows or columns) into `parts` blocks of a multiple of `unit`, no larger than
// `block`.
int64_t cut(int64_t extent, int64_t parts, int64_t unit, int64_t block) {
  return std::min(block, round_up(ceil_div(extent, parts), unit));
}

// Cuts the output into blocks. A side packed per block is cut at the kernel's blocking (the
// left block stays in L2); a side already in panels spans the whole output, since cutting
// there would only pack the other side again. Then, for large enough work, the blocks are
// cut further until every thread has kBlocksPerThread of them: first along the side whose
// partner is already in panels (more row blocks only read b's panels again; more column
// blocks only read a's again, or pack the block's rows of a again, the smaller side when b
// is not in panels yet), then along the other.
void choose_blocks(Problem& problem) {
  const MicroKernel& kernel = problem.kernel;
  problem.row_block =
      problem.left_packed ? std::min(round_up(problem.m, kernel.rows), 4 * kernel.row_block) : kernel.row_block;
  problem.column_block = problem.right_packed ? round_up(problem.n, kernel.columns) : kernel.column_block;
  const int64_t entries = static_cast<int64_t>(problem.batch.size());
  problem.threads = threads_for(problem.products());
  const int64_t wanted = problem.threads > 1 ? problem.threads * kBlocksPerThread : 1;
  const auto blocks = [&] {
    return entries * ceil_div(problem.m, problem.row_block) * ceil_div(problem.n, problem.column_block);
  };
  const auto cut_rows = [&] {
    const int64_t parts = ceil_div(wanted, entries * ceil_div(problem.n, problem.column_block));
    problem.row_block = cut(problem.m, parts, kernel.rows, problem.row_block);
  };
  const auto cut_columns = [&] {
    const int64_t parts = ceil_div(wanted, entries * ceil_div(problem.m, problem.row_block));
    problem.column_block = cut(problem.n, parts, kernel.columns, problem.column_block);
  };
  const bool rows_first = problem.right_packed && !problem.left_packed;
  if (blocks() < wanted) rows_first ? cut_rows() : cut_columns();
  if (blocks() < wanted) rows_first ? cut_columns() : cut_rows();
  problem.row_blocks = ceil_div(problem.m, problem.row_block);
  problem.column_blocks = ceil_div(problem.n, problem.column_block);
}

// ---------------------------------------------------------------- small batches

// A batch of at most kMaxBatchRows rows: each unit of work is one entry's strip of right
// panels (a few panels side by side), b streamed once from where it lies.
struct RowsProblem {
  const std::vector<GemmOperands>& batch;
  int64_t m, n, k;
  GemmEpilogue epilogue;
  const MicroKernel& kernel;
  bool packed;                      // b in panels (packed_b), else stored [K, N]
  std::vector<const float*> tails;  // stored b: each entry's last panel, packed (null: none)
};

// Outputs [column, column + columns) of the rows: sums into `out` (rows × columns, the
// kernel's strip or panel row kernels), then the epilogue into c.
void multiply_strip(const RowsProblem& problem, size_t entry, int64_t first_panel, int64_t panels) {
  const MicroKernel& kernel = problem.kernel;
  const GemmOperands& operands = problem.batch[entry];
  const int64_t width = kernel.columns, rows = problem.m;
  const int64_t strip_panels = kernel.strip_panels[rows - 1];
  alignas(64) float sums[kMaxBatchRows * 8 * 16];
  const int64_t out_stride = panels * width;
  for (int64_t panel = 0; panel < panels;) {
    const int64_t q = first_panel + panel;
    const bool tail = !problem.packed && (q + 1) * width > problem.n;
    const float* b = problem.packed ? operands.packed_b + q * problem.k * width
                                    : (tail ? problem.tails[entry] : operands.b + q * width);
    const int64_t panel_stride = problem.packed ? problem.k * width : width;
    const int64_t step = problem.packed || tail ? width : problem.n;
    float* out = sums + panel * width;
    const bool whole_strip =
        panel + strip_panels <= panels && (problem.packed || (q + strip_panels) * width <= problem.n);
    const RowsKernel multiply = whole_strip ? kernel.strips[rows - 1] : kernel.panel_rows[rows - 1];
    multiply(problem.k, operands.a, problem.k, b, panel_stride, step, out, out_stride);
    panel += whole_strip ? strip_panels : 1;
  }
  const int64_t column = first_panel * width;
  const int64_t columns = std::min(out_stride, problem.n - column);
  for (int64_t r = 0; r < rows; ++r) {
    std::memcpy(operands.c + r * problem.n + column, sums + r * out_stride,
                static_cast<size_t>(columns) * sizeof(float));
  }
  finish_rows(problem.epilogue, problem.epilogue.bias ? problem.epilogue.bias + column : nullptr, operands.row_bias,
              operands.c + column, problem.n, rows, columns);
}

void gemm_rows(const RowsProblem& problem) {
  const MicroKernel& kernel = problem.kernel;
  const int64_t panels = ceil_div(problem.n, kernel.columns);
  // Units of up to 8 panels (the sums buffer), a whole number of strips.
  const int64_t strip_panels = kernel.strip_panels[problem.m - 1];
  const int64_t unit = std::max<int64_t>(1, 8 / strip_panels) * strip_panels;
  const int64_t units = ceil_div(panels, unit);
  const int64_t total = static_cast<int64_t>(problem.batch.size()) * units;
  const int64_t products = total * unit * kernel.columns * problem.m * problem.k;
  const int64_t threads = std::min(threads_for(products), total);
  // Each thread takes units from a counter (about 8 per thread): one that starts late or
  // shares its core takes fewer.
  const int64_t grab = std::max<int64_t>(1, total / (8 * threads));
  std::atomic<int64_t> next{0};
  run_on_pool(0, threads, 1, [&](int64_t, int64_t) {
    for (int64_t begin = next.fetch_add(grab); begin < total; begin = next.fetch_add(grab)) {
      for (int64_t index = begin; index < std::min(total, begin + grab); ++index) {
        const size_t entry = static_cast<size_t>(index / units);
        const int64_t first = index % units * unit;
        multiply_strip(problem, entry, first, std::min(unit, panels - first));
      }
    }
  });
}

// The small-batch path for stored [K, N] b: the last, partial panel of each entry is
// packed (zero-padded) so that no load reads past a row of b.
void gemm_rows_stored(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k,
                      const GemmEpilogue& epilogue, const MicroKernel& kernel) {
  RowsProblem problem{batch, m, n, k, epilogue, kernel, false, {}};
  const int64_t width = kernel.columns;
  const int64_t tail_column = n / width * width;
  Scratch tails(n > tail_column ? static_cast<int64_t>(batch.size()) * k * width : 0);
  for (size_t entry = 0; entry < batch.size() && n > tail_column; ++entry) {
    float* packed = tails.data() + static_cast<int64_t>(entry) * k * width;
    pack_right_block(kernel, StoredRight{batch[entry].b, RightLayout::KByN, n, k}, tail_column, n - tail_column, 0, k,
                     packed);
    problem.tails.push_back(packed);
  }
  gemm_rows(problem);
}

// ---------------------------------------------------------------- one row, weight [N, K] stored

// A product of one row with a stored [N, K] b (a linear weight given at run time): packing b
// would move as much memory as the product reads, so b is read in place once, 8 columns by
// 8 k at a time, each block transposed into a small buffer first.
typedef float Float4 __attribute__((vector_size(16)));

Float4 load4(const float* data) {
  Float4 value;
  std::memcpy(&value, data, sizeof(value));
  return value;
}

// b[p0 + c][j0 + j] at block[c * 8 + j] for c < depth, j < columns; zero elsewhere.
void transposed_block(const MicroKernel& kernel, const float* b, int64_t k, int64_t j0, int64_t columns, int64_t p0,
                      int64_t depth, float* block) {
  if (columns == 8 && depth == 8 && kernel.transpose8 != nullptr) {
    kernel.transpose8(b + j0 * k + p0, k, block, 8);
    return;
  }
  std::fill(block, block + 64, 0.0f);
  for (int64_t c = 0; c < depth; ++c) {
    for (int64_t j = 0; j < columns; ++j) block[c * 8 + j] = b[(j0 + j) * k + p0 + c];
  }
}

// Output columns [j0, j0 + 8) of the row: the same sums, in the same order, as the
// micro-kernels; then the epilogue.
void multiply_row(const GemmOperands& operands, int64_t n, int64_t k, const GemmEpilogue& epilogue,
                  const MicroKernel& kernel, int64_t j0) {
  const int64_t columns = std::min<int64_t>(8, n - j0);
  Float4 sums[2] = {};
  alignas(64) float block[64];
  for (int64_t p0 = 0; p0 < k; p0 += 8) {
    const int64_t depth = std::min<int64_t>(8, k - p0);
    transposed_block(kernel, operands.b, k, j0, columns, p0, depth, block);
    for (int64_t c = 0; c < depth; ++c) {
      const Float4 left = simd::splat<Float4>(operands.a[p0 + c]);
      sums[0] = sums[0] + left * load4(block + c * 8);
      sums[1] = sums[1] + left * load4(block + c * 8 + 4);
    }
  }
  float values[8];
  std::memcpy(values, sums, sizeof(values));
  for (int64_t j = 0; j < columns; ++j) {
    float v = values[j];
    if (epilogue.bias) v += epilogue.bias[j0 + j];
    if (operands.row_bias) v += operands.row_bias[0];
    operands.c[j0 + j] = v;
  }
  apply_activation(epilogue.activation, operands.c + j0, columns);
}

void gemm_one_row_transposed(const std::vector<GemmOperands>& batch, int64_t n, int64_t k, const GemmEpilogue& epilogue,
                             const MicroKernel& kernel) {
  const int64_t blocks = (n + 7) / 8;
  const int64_t total = static_cast<int64_t>(batch.size()) * blocks;
  const int64_t grain = std::max<int64_t>(1, kParallelProducts / (8 * std::max<int64_t>(k, 1)));
  parallel_for(0, total, grain, [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) {
      multiply_row(batch[static_cast<size_t>(index / blocks)], n, k, epilogue, kernel, index % blocks * 8);
    }
  });
}

// ---------------------------------------------------------------- b packed before the blocks

// The entries with their stored b packed into panels once (entries sharing a b share its
// panels), kept alive by `storage`.
std::vector<GemmOperands> with_packed_right(const std::vector<GemmOperands>& batch, RightLayout layout, int64_t n,
                                            int64_t k, const MicroKernel& kernel, Scratch& storage) {
  std::vector<const float*> distinct;
  std::vector<size_t> which(batch.size());
  for (size_t entry = 0; entry < batch.size(); ++entry) {
    const auto found = std::find(distinct.begin(), distinct.end(), batch[entry].b);
    which[entry] = static_cast<size_t>(found - distinct.begin());
    if (found == distinct.end()) distinct.push_back(batch[entry].b);
  }
  const int64_t width = kernel.columns;
  const int64_t panels = ceil_div(n, width);
  const int64_t matrix = panels * k * width;
  storage = Scratch(static_cast<int64_t>(distinct.size()) * matrix);
  float* packed = storage.data();
  const int64_t total = static_cast<int64_t>(distinct.size()) * panels;
  parallel_for(0, total, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(1, k * width)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t index = begin; index < end; ++index) {
                   const int64_t matrix_index = index / panels, panel = index % panels;
                   const StoredRight stored{distinct[static_cast<size_t>(matrix_index)], layout, n, k};
                   pack_right_block(kernel, stored, panel * width, std::min(width, n - panel * width), 0, k,
                                    packed + matrix_index * matrix + panel * k * width);
                 }
               });
  std::vector<GemmOperands> result = batch;
  for (size_t entry = 0; entry < batch.size(); ++entry) {
    result[entry].packed_b = packed + static_cast<int64_t>(which[entry]) * matrix;
  }
  return result;
}

Problem make_problem(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k, RightLayout layout,
                     const GemmEpilogue& epilogue) {
  Problem problem{batch, m, n, k, layout, epilogue, micro_kernel()};
  problem.left_packed = batch.front().packed_a != nullptr;
  problem.right_packed = batch.front().packed_b != nullptr;
  return problem;
}

}  // namespace

void gemm(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k, RightLayout layout,
          const GemmEpilogue& epilogue) {
  if (batch.empty() || m <= 0 || n <= 0) return;
  const MicroKernel& kernel = micro_kernel();
  const bool right_packed = batch.front().packed_b != nullptr;
  if (m <= kMaxBatchRows && batch.front().packed_a == nullptr && k > 0) {
    if (right_packed) return gemm_rows(RowsProblem{batch, m, n, k, epilogue, kernel, true, {}});
    if (layout == RightLayout::KByN) return gemm_rows_stored(batch, m, n, k, epilogue, kernel);
    if (m == 1) return gemm_one_row_transposed(batch, n, k, epilogue, kernel);
  }
  Problem problem = make_problem(batch, m, n, k, layout, epilogue);
  choose_blocks(problem);
  const int64_t packed_bytes = static_cast<int64_t>(batch.size()) * round_up(n, kernel.columns) * k * 4;
  const bool pack_first = !problem.right_packed && problem.row_blocks > 1 && k > 0 && packed_bytes <= kPackedRightLimit;
  if (!pack_first) return run_blocks(problem);
  Scratch storage;
  const std::vector<GemmOperands> packed = with_packed_right(batch, layout, n, k, kernel, storage);
  Problem repacked = make_problem(packed, m, n, k, layout, epilogue);
  choose_blocks(repacked);
  run_blocks(repacked);
}

void gemm_packed_right(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k,
                       const RightPacker& packer, const GemmEpilogue& epilogue) {
  if (batch.empty() || m <= 0 || n <= 0) return;
  Problem problem = make_problem(batch, m, n, k, RightLayout::KByN, epilogue);
  problem.packer = &packer;
  problem.right_packed = false;
  choose_blocks(problem);
  run_blocks(problem);
}

int64_t left_panels_size(int64_t rows, int64_t depth) {
  return round_up(rows, micro_kernel().rows) * depth;
}

void pack_left_rows(const float* a, int64_t rows, int64_t depth, float* packed) {
  pack_left_block(micro_kernel(), a, depth, 0, rows, 0, depth, packed);
}

PackedPanels pack_left_panels(const float* a, int64_t matrices, int64_t extent, int64_t depth) {
  const MicroKernel& kernel = micro_kernel();
  PackedPanels packed{matrices, extent, depth, kernel.rows, Tensor()};
  const int64_t matrix = packed.panels() * depth * packed.width;
  packed.storage = Tensor::uninitialized(DType::Float32, {std::max<int64_t>(1, matrices * matrix)});
  for (int64_t index = 0; index < matrices; ++index) {
    pack_left_block(kernel, a + index * extent * depth, depth, 0, extent, 0, depth,
                    packed.storage.data_as<float>() + index * matrix);
  }
  return packed;
}

PackedPanels pack_right_panels(const float* b, RightLayout layout, int64_t extent, int64_t depth) {
  const MicroKernel& kernel = micro_kernel();
  PackedPanels packed{1, extent, depth, kernel.columns, Tensor()};
  const int64_t floats = packed.panels() * depth * packed.width;
  packed.storage = Tensor::uninitialized(DType::Float32, {std::max<int64_t>(1, floats)});
  pack_right_block(kernel, StoredRight{b, layout, extent, depth}, 0, extent, 0, depth, packed.storage.data_as<float>());
  return packed;
}

bool fits_left_kernel(const PackedPanels& panels) {
  return panels.width == micro_kernel().rows;
}

bool fits_right_kernel(const PackedPanels& panels) {
  return panels.width == micro_kernel().columns;
}

}  // namespace edgert::kernels
