// Blocking, packing and threading of the matrix products (gemm.hpp), and the portable
// micro-kernel.
//
// The output of each product is cut into tiles of up to kTileRows × kTileColumns; runs of
// tiles are the units of work on the thread pool, so each output element belongs to one
// thread. For
// every kDepth-long slice of k a tile packs its slice of b into panels of the micro-kernel's
// width and its slice of a into panels of its height (zero-padded at the edges), then runs
// the micro-kernel over them: the sums of one slice continue from the previous slice's, so
// each output still adds its products in increasing k.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include "common.hpp"
#include "edgert/threadpool.h"
#include "gemm.hpp"
#include "isa.hpp"
#include "linear.hpp"

namespace edgert::kernels {
namespace {

// Sizes for caches of 32-64 KiB (L1) and 512 KiB-2 MiB (L2): a packed b panel of one
// micro-kernel (kDepth × 32 floats) stays in L1, the tile's packed a (kTileRows × kDepth) in
// L2. kTileRows is a multiple of every micro-kernel's height, kTileColumns of every width.
constexpr int64_t kTileRows = 96;
constexpr int64_t kTileColumns = 256;
constexpr int64_t kDepth = 256;
// Multiply-adds below which a chunk of tiles is not worth another thread.
constexpr int64_t kParallelProducts = int64_t{1} << 18;

// Portable micro-kernel (4×8) in GCC/Clang vector types: SSE2 on x86-64, NEON on aarch64.
typedef float Float4 __attribute__((vector_size(16)));
constexpr int kPortableRows = 4;

Float4 load4(const float* data) {
  Float4 value;
  std::memcpy(&value, data, sizeof(value));
  return value;
}

void store4(float* data, Float4 value) { std::memcpy(data, &value, sizeof(value)); }

void portable_kernel(int64_t depth, const float* a, const float* b, float* c, int64_t ldc,
                     bool accumulate) {
  Float4 sums[kPortableRows][2];
#pragma GCC unroll 4
  for (int i = 0; i < kPortableRows; ++i) {
    sums[i][0] = accumulate ? load4(c + i * ldc) : Float4{};
    sums[i][1] = accumulate ? load4(c + i * ldc + 4) : Float4{};
  }
  for (int64_t p = 0; p < depth; ++p) {
    const Float4 right0 = load4(b), right1 = load4(b + 4);
#pragma GCC unroll 4
    for (int i = 0; i < kPortableRows; ++i) {
      const Float4 left = Float4{} + a[i];
      sums[i][0] = sums[i][0] + left * right0;
      sums[i][1] = sums[i][1] + left * right1;
    }
    a += kPortableRows;
    b += 8;
  }
#pragma GCC unroll 4
  for (int i = 0; i < kPortableRows; ++i) {
    store4(c + i * ldc, sums[i][0]);
    store4(c + i * ldc + 4, sums[i][1]);
  }
}

MicroKernel select_micro_kernel() {
  switch (kernel_isa()) {
#if defined(__x86_64__)
    case Isa::Avx512: return avx512_micro_kernel();
    case Isa::Avx2: return avx2_micro_kernel();
#endif
    default: return {kPortableRows, 8, portable_kernel};
  }
}

// 64-byte aligned scratch memory for the packed panels.
class PackBuffer {
 public:
  explicit PackBuffer(int64_t floats)
      : data_(static_cast<float*>(::operator new(static_cast<size_t>(floats) * sizeof(float),
                                                 std::align_val_t(64)))) {}
  ~PackBuffer() { ::operator delete(data_, std::align_val_t(64)); }
  PackBuffer(const PackBuffer&) = delete;
  PackBuffer& operator=(const PackBuffer&) = delete;
  float* data() const { return data_; }

 private:
  float* data_;
};

struct Problem {
  const std::vector<GemmOperands>& batch;
  int64_t m, n, k;
  RightLayout layout;
  GemmEpilogue epilogue;
  MicroKernel kernel;
  int64_t row_tiles, column_tiles;
  const RightPacker* packer = nullptr;  // when set, b comes from it
};

// One tile's region of one product (batch entry `entry`), and the k slice being packed.
struct Block {
  const GemmOperands& operands;
  size_t entry;
  int64_t row, rows, column, columns, depth_begin, depth;
};

// Copies rows × depth values of `source` (row stride source_stride) transposed into
// `target`: target[p * target_stride + i] = source[i * source_stride + p]; in 8×8 blocks
// when the kernel has a transpose and there are 8 rows.
void copy_transposed(const MicroKernel& kernel, const float* source, int64_t source_stride,
                     int64_t rows, int64_t depth, float* target, int64_t target_stride) {
  int64_t p = 0;
  if (kernel.transpose8 != nullptr && rows == 8) {
    for (; p + 8 <= depth; p += 8) {
      kernel.transpose8(source + p, source_stride, target + p * target_stride, target_stride);
    }
  }
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t q = p; q < depth; ++q) target[q * target_stride + i] = source[i * source_stride + q];
  }
}

// a rows [row, row + rows), k slice: panels of kernel.rows rows, p-major, zero-padded.
void pack_left(const Problem& problem, const Block& block, float* packed) {
  const int64_t height = problem.kernel.rows;
  for (int64_t panel = 0; panel < block.rows; panel += height) {
    float* out = packed + panel * block.depth;
    const int64_t valid = std::min(height, block.rows - panel);
    const float* source = block.operands.a + (block.row + panel) * problem.k + block.depth_begin;
    copy_transposed(problem.kernel, source, problem.k, valid, block.depth, out, height);
    for (int64_t i = valid; i < height; ++i) {
      for (int64_t p = 0; p < block.depth; ++p) out[p * height + i] = 0.0f;
    }
  }
}

// b columns [column, column + columns), k slice: panels of kernel.columns, p-major.
void pack_right(const Problem& problem, const Block& block, float* packed) {
  const int64_t width = problem.kernel.columns;
  if (problem.packer != nullptr) {
    problem.packer->pack(problem.packer->context, block.entry, block.depth_begin, block.depth,
                         block.column, block.columns, width, packed);
    return;
  }
  for (int64_t panel = 0; panel < block.columns; panel += width) {
    float* out = packed + panel * block.depth;
    const int64_t valid = std::min(width, block.columns - panel);
    const int64_t first = block.column + panel;
    if (problem.layout == RightLayout::KByN) {
      for (int64_t p = 0; p < block.depth; ++p) {
        const float* source = block.operands.b + (block.depth_begin + p) * problem.n + first;
        std::memcpy(out + p * width, source, static_cast<size_t>(valid) * sizeof(float));
        std::fill(out + p * width + valid, out + (p + 1) * width, 0.0f);
      }
      continue;
    }
    for (int64_t j = 0; j < valid; j += 8) {  // weight rows j.. become packed columns
      const float* source = block.operands.b + (first + j) * problem.k + block.depth_begin;
      copy_transposed(problem.kernel, source, problem.k, std::min<int64_t>(8, valid - j), block.depth,
                      out + j, width);
    }
    for (int64_t j = valid; j < width; ++j) {
      for (int64_t p = 0; p < block.depth; ++p) out[p * width + j] = 0.0f;
    }
  }
}

// A micro-kernel call on a partial edge: through a full-size scratch tile.
void run_edge(const MicroKernel& kernel, const Block& block, const float* a, const float* b,
              float* c, int64_t ldc, int64_t rows, int64_t columns) {
  float scratch[32 * 32];
  const bool accumulate = block.depth_begin > 0;
  for (int64_t i = 0; i < rows && accumulate; ++i) {
    std::memcpy(scratch + i * kernel.columns, c + i * ldc, static_cast<size_t>(columns) * sizeof(float));
  }
  kernel.run(block.depth, a, b, scratch, kernel.columns, accumulate);
  for (int64_t i = 0; i < rows; ++i) {
    std::memcpy(c + i * ldc, scratch + i * kernel.columns, static_cast<size_t>(columns) * sizeof(float));
  }
}

void multiply_block(const Problem& problem, const Block& block, const float* a, const float* b) {
  const MicroKernel& kernel = problem.kernel;
  for (int64_t jr = 0; jr < block.columns; jr += kernel.columns) {
    const int64_t columns = std::min<int64_t>(kernel.columns, block.columns - jr);
    for (int64_t ir = 0; ir < block.rows; ir += kernel.rows) {
      const int64_t rows = std::min<int64_t>(kernel.rows, block.rows - ir);
      float* c = block.operands.c + (block.row + ir) * problem.n + block.column + jr;
      const float* left = a + ir * block.depth;
      const float* right = b + jr * block.depth;
      if (rows == kernel.rows && columns == kernel.columns) {
        kernel.run(block.depth, left, right, c, problem.n, block.depth_begin > 0);
      } else {
        run_edge(kernel, block, left, right, c, problem.n, rows, columns);
      }
    }
  }
}

void finish_tile(const Problem& problem, const Block& block) {
  const GemmEpilogue& epilogue = problem.epilogue;
  for (int64_t i = 0; i < block.rows; ++i) {
    float* c = block.operands.c + (block.row + i) * problem.n + block.column;
    if (problem.k == 0) std::fill(c, c + block.columns, 0.0f);
    const float* row_bias = block.operands.row_bias;
    if (epilogue.bias == nullptr && row_bias == nullptr && !epilogue.relu) continue;
    for (int64_t j = 0; j < block.columns; ++j) {
      float v = c[j];
      if (epilogue.bias) v += epilogue.bias[block.column + j];
      if (row_bias) v += row_bias[block.row + i];
      c[j] = epilogue.relu ? relu(v) : v;
    }
  }
}

Block tile_block(const Problem& problem, int64_t tile) {
  const int64_t per_product = problem.row_tiles * problem.column_tiles;
  const size_t entry = static_cast<size_t>(tile / per_product);
  const int64_t row = (tile % per_product % problem.row_tiles) * kTileRows;
  const int64_t column = (tile % per_product) / problem.row_tiles * kTileColumns;
  return Block{problem.batch[entry], entry, row, std::min(kTileRows, problem.m - row), column,
               std::min(kTileColumns, problem.n - column), 0, 0};
}

// The tiles [begin, end) on one thread. Tiles are numbered row tile first, so consecutive
// tiles of one column share b: each k slice of b is packed once for all of them.
struct PackBuffers {
  explicit PackBuffers(int64_t depth)
      : left(kTileRows * std::max<int64_t>(depth, 1)), right(kTileColumns * std::max<int64_t>(depth, 1)) {}
  PackBuffer left, right;
};

void run_tiles(const Problem& problem, PackBuffers& buffers, int64_t begin, int64_t end) {
  float* const left = buffers.left.data();
  float* const right = buffers.right.data();
  while (begin < end) {
    // Tiles [begin, group_end) share one column of one product.
    const int64_t group_end = std::min(end, (begin / problem.row_tiles + 1) * problem.row_tiles);
    for (int64_t p = 0; p < problem.k; p += kDepth) {
      for (int64_t tile = begin; tile < group_end; ++tile) {
        Block block = tile_block(problem, tile);
        block.depth_begin = p;
        block.depth = std::min(kDepth, problem.k - p);
        if (tile == begin) pack_right(problem, block, right);
        pack_left(problem, block, left);
        multiply_block(problem, block, left, right);
      }
    }
    for (int64_t tile = begin; tile < group_end; ++tile) finish_tile(problem, tile_block(problem, tile));
    begin = group_end;
  }
}

// Products of one row (a vector times a weight, batch-1 inference): packing b would move as
// much memory as the product reads, so b is read in place once, 8 columns by 8 k at a time,
// each block transposed (linear's weight) into a small buffer first. (Measured: from two
// rows on, packing is faster again.)

// b[p0 + c][j0 + j] at block[c * 8 + j] for c < depth, j < columns; zero elsewhere.
const float* right_block(const Problem& problem, const GemmOperands& operands, int64_t j0,
                         int64_t columns, int64_t p0, int64_t depth, float* block) {
  const bool full = columns == 8 && depth == 8;
  if (problem.layout == RightLayout::KByN) {
    if (full && problem.n >= 8) {  // rows of b are read where they are
      for (int64_t c = 0; c < 8; ++c) std::memcpy(block + c * 8, operands.b + (p0 + c) * problem.n + j0, 32);
      return block;
    }
  } else if (full && problem.kernel.transpose8 != nullptr) {
    problem.kernel.transpose8(operands.b + j0 * problem.k + p0, problem.k, block, 8);
    return block;
  }
  std::fill(block, block + 64, 0.0f);
  for (int64_t c = 0; c < depth; ++c) {
    for (int64_t j = 0; j < columns; ++j) {
      block[c * 8 + j] = problem.layout == RightLayout::KByN ? operands.b[(p0 + c) * problem.n + j0 + j]
                                                             : operands.b[(j0 + j) * problem.k + p0 + c];
    }
  }
  return block;
}

// Output columns [j0, j0 + 8) of the row: the same sums, in the same order, as the
// micro-kernels; then the epilogue.
void multiply_row(const Problem& problem, const GemmOperands& operands, int64_t j0) {
  const int64_t columns = std::min<int64_t>(8, problem.n - j0);
  Float4 sums[2] = {};
  alignas(64) float block[64];
  for (int64_t p0 = 0; p0 < problem.k; p0 += 8) {
    const int64_t depth = std::min<int64_t>(8, problem.k - p0);
    const float* right = right_block(problem, operands, j0, columns, p0, depth, block);
    for (int64_t c = 0; c < depth; ++c) {
      const Float4 left = Float4{} + operands.a[p0 + c];
      sums[0] = sums[0] + left * load4(right + c * 8);
      sums[1] = sums[1] + left * load4(right + c * 8 + 4);
    }
  }
  const GemmEpilogue& epilogue = problem.epilogue;
  float values[8];
  store4(values, sums[0]);
  store4(values + 4, sums[1]);
  for (int64_t j = 0; j < columns; ++j) {
    float v = values[j];
    if (epilogue.bias) v += epilogue.bias[j0 + j];
    if (operands.row_bias) v += operands.row_bias[0];
    operands.c[j0 + j] = epilogue.relu ? relu(v) : v;
  }
}

void gemm_one_row(const Problem& problem) {
  const int64_t blocks = (problem.n + 7) / 8;
  const int64_t total = static_cast<int64_t>(problem.batch.size()) * blocks;
  const int64_t grain = std::max<int64_t>(1, kParallelProducts / (8 * std::max<int64_t>(problem.k, 1)));
  parallel_for(0, total, grain, [&](int64_t begin, int64_t end) {
    for (int64_t index = begin; index < end; ++index) {
      multiply_row(problem, problem.batch[static_cast<size_t>(index / blocks)], index % blocks * 8);
    }
  });
}

// The packed path: every tile of every product, on the pool.
void gemm_tiles(const Problem& problem) {
  const int64_t m = problem.m, n = problem.n, k = problem.k;
  const std::vector<GemmOperands>& batch = problem.batch;
  const int64_t tiles = static_cast<int64_t>(batch.size()) * problem.row_tiles * problem.column_tiles;
  const int64_t products_per_tile =
      std::min(m, kTileRows) * std::min(n, kTileColumns) * std::max<int64_t>(k, 1);
  // Runs of consecutive tiles (about four per thread, at least kParallelProducts of work)
  // are handed out one at a time to whichever thread is free: a thread that starts late or
  // shares its core with other work takes fewer. Each tile still runs on one thread.
  const int64_t threads = static_cast<int64_t>(edgert_threadpool_size());
  const int64_t run = std::max((tiles + 4 * threads - 1) / (4 * threads),
                               std::max<int64_t>(1, kParallelProducts / products_per_tile));
  const int64_t runs = (tiles + run - 1) / run;
  std::atomic<int64_t> next{0};
  parallel_for(0, std::min(runs, threads), 1, [&](int64_t, int64_t) {
    PackBuffers buffers(std::min(k, kDepth));
    for (int64_t index = next++; index < runs; index = next++) {
      run_tiles(problem, buffers, index * run, std::min(tiles, (index + 1) * run));
    }
  });
}

Problem make_problem(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k,
                     RightLayout layout, const GemmEpilogue& epilogue) {
  return Problem{batch, m, n, k, layout, epilogue, select_micro_kernel(),
                 (m + kTileRows - 1) / kTileRows, (n + kTileColumns - 1) / kTileColumns};
}

}  // namespace

void gemm(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k,
          RightLayout layout, const GemmEpilogue& epilogue) {
  if (batch.empty() || m <= 0 || n <= 0) return;
  const Problem problem = make_problem(batch, m, n, k, layout, epilogue);
  if (m == 1) return gemm_one_row(problem);
  gemm_tiles(problem);
}

void gemm_packed_right(const std::vector<GemmOperands>& batch, int64_t m, int64_t n, int64_t k,
                       const RightPacker& packer, const GemmEpilogue& epilogue) {
  if (batch.empty() || m <= 0 || n <= 0) return;
  Problem problem = make_problem(batch, m, n, k, RightLayout::KByN, epilogue);
  problem.packer = &packer;
  gemm_tiles(problem);  // also for one row: there is no stored b to read in place
}

}  // namespace edgert::kernels
