// The int8 GEMM's kernels on their own, without the runtime: for random operands across the
// packing's edges, the kernels of this process's integer level (EDGERT_KERNELS_ISA lowers
// it) must give the same bytes as the portable kernels and as the documented arithmetic
// computed here element by element (int64 sums, then the float32 steps); the activation
// quantization and the range scan must match their portable forms on values that include
// NaN, infinities and ties. Prints the level and the number of checks, exits 1 on a
// mismatch. Built and run by tests/native/test_int8_gemm_programs.py: natively, and for
// aarch64 under qemu-user (a processor with and without the dot-product extension).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "edgert/threadpool.h"
#include "kernels_quantized/int8_gemm.hpp"
#include "kernels_quantized/quantized.hpp"

// The kernels' only use of the thread pool, run in line.
extern "C" void edgert_threadpool_parallel_for(int64_t begin, int64_t end, int64_t, edgert_range_fn fn,
                                               void* context) {
  if (end > begin) fn(context, begin, end);
}

namespace {

using namespace edgert_quantized;

struct Random {
  uint64_t state;
  uint32_t next() {
    state ^= state << 13, state ^= state >> 7, state ^= state << 17;
    return static_cast<uint32_t>(state >> 11);
  }
  int8_t byte() { return static_cast<int8_t>(next() & 0xff); }
  float uniform(float low, float high) { return low + (high - low) * static_cast<float>(next() % 1000000) / 1e6f; }
};

struct Problem {
  int64_t rows, columns, depth;
  std::vector<int8_t> left, right;  // [rows][depth], [columns][depth]
  std::vector<int32_t> left_zeros, right_zeros;
  std::vector<float> left_scales, right_scales, bias;
  bool relu;
};

Problem make_problem(Random& random, int64_t rows, int64_t columns, int64_t depth, int32_t zero_spread) {
  Problem p{rows, columns, depth, {}, {}, {}, {}, {}, {}, {}, (rows + columns) % 2 == 0};
  for (int64_t i = 0; i < rows * depth; ++i) p.left.push_back(random.byte());
  for (int64_t i = 0; i < columns * depth; ++i) p.right.push_back(random.byte());
  const auto zero = [&](int32_t spread) {
    if (spread > 1000) return static_cast<int32_t>(random.next() * 2654435761u);  // any int32
    return static_cast<int32_t>(random.next() % (2 * spread + 1)) - spread;
  };
  for (int64_t i = 0; i < rows; ++i) p.left_zeros.push_back(zero(zero_spread)), p.left_scales.push_back(random.uniform(1e-3f, 0.1f));
  for (int64_t j = 0; j < columns; ++j) {
    p.right_zeros.push_back(zero(zero_spread));
    p.right_scales.push_back(random.uniform(1e-3f, 0.1f));
    p.bias.push_back(random.uniform(-1.0f, 1.0f));
  }
  return p;
}

// The documented arithmetic, element by element.
std::vector<float> expected(const Problem& p) {
  std::vector<float> out(static_cast<size_t>(p.rows * p.columns));
  for (int64_t i = 0; i < p.rows; ++i) {
    for (int64_t j = 0; j < p.columns; ++j) {
      uint64_t sum = 0;
      for (int64_t k = 0; k < p.depth; ++k) {
        const int64_t l = int64_t{p.left[i * p.depth + k]} - p.left_zeros[i];
        const int64_t r = int64_t{p.right[j * p.depth + k]} - p.right_zeros[j];
        sum += static_cast<uint64_t>(l) * static_cast<uint64_t>(r);
      }
      float v = static_cast<float>(static_cast<int64_t>(sum)) * (p.left_scales[i] * p.right_scales[j]);
      v += p.bias[j];
      if (p.relu) v = v > 0.0f ? v : 0.0f;
      out[i * p.columns + j] = v;
    }
  }
  return out;
}

std::vector<float> multiplied(const Int8Gemm& gemm, const Problem& p) {
  const int64_t depth = padded_depth(p.depth);
  std::vector<uint8_t> panels(static_cast<size_t>(panel_count(p.columns) * panel_bytes(depth)));
  std::vector<int64_t> right_sums(static_cast<size_t>(p.columns));
  pack_right(p.right.data(), p.columns, p.depth, gemm.panel_bias, panels.data(), right_sums.data());
  std::vector<int16_t> left(static_cast<size_t>(p.rows * depth));
  std::vector<int32_t> left_sums(static_cast<size_t>(p.rows));
  pack_left(gemm, p.left.data(), p.rows, p.depth, left.data(), left_sums.data());
  std::vector<int64_t> wide_offsets, wide_sums;
  std::vector<int32_t> offsets, sums;
  bool exact = p.depth <= kMaxInt32Depth;
  for (int32_t zero : p.left_zeros) exact = exact && zero >= -128 && zero <= 127;
  for (int64_t j = 0; j < p.columns; ++j) {
    const int32_t zero = p.right_zeros[j];
    exact = exact && zero >= -128 && zero <= 127;
    wide_offsets.push_back(int64_t{gemm.panel_bias} + zero);
    wide_sums.push_back(static_cast<int64_t>(static_cast<uint64_t>(right_sums[j]) -
                                             static_cast<uint64_t>(p.depth) * static_cast<uint64_t>(int64_t{zero})));
    offsets.push_back(static_cast<int32_t>(wide_offsets.back()));
    sums.push_back(static_cast<int32_t>(wide_sums.back()));
  }
  std::vector<float> out(static_cast<size_t>(p.rows * p.columns));
  Epilogue e;
  e.row_sums = left_sums.data(), e.row_zeros = p.left_zeros.data(), e.row_scales = p.left_scales.data();
  e.column_offsets = offsets.data(), e.column_sums = sums.data();
  e.wide_column_offsets = wide_offsets.data(), e.wide_column_sums = wide_sums.data();
  e.column_scales = p.right_scales.data(), e.column_bias = p.bias.data();
  e.exact_in_int32 = exact, e.relu = p.relu, e.out = out.data(), e.out_stride = p.columns;
  multiply_parallel(gemm, Product{left.data(), depth, p.rows, panels.data(), p.columns, depth, e});
  return out;
}

bool same_bytes(const void* a, const void* b, size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

int check_products(const Int8Gemm& gemm, Random& random) {
  const int64_t shapes[][3] = {{1, 1, 1},   {2, 5, 3},    {3, 16, 15},  {4, 17, 16}, {5, 31, 17}, {6, 63, 31},
                               {7, 64, 33}, {8, 65, 64},  {9, 100, 65}, {13, 129, 100}, {64, 70, 257}};
  int failures = 0;
  for (int32_t spread : {0, 5, 128, 100000}) {  // zero points: none, small, int8's ends, any int32
    for (const auto& shape : shapes) {
      const Problem p = make_problem(random, shape[0], shape[1], shape[2], spread);
      const std::vector<float> want = expected(p), got = multiplied(gemm, p), portable = multiplied(portable_gemm(), p);
      const size_t bytes = want.size() * sizeof(float);
      if (!same_bytes(got.data(), want.data(), bytes) || !same_bytes(portable.data(), want.data(), bytes)) {
        std::printf("product %lldx%lldx%lld (zero points within %d) differs\n", static_cast<long long>(shape[0]),
                    static_cast<long long>(shape[1]), static_cast<long long>(shape[2]), spread);
        ++failures;
      }
    }
  }
  return failures;
}

int check_quantization(const Int8Gemm& gemm, Random& random) {
  std::vector<float> x;
  for (int i = 0; i < 1000; ++i) x.push_back(random.uniform(-6.0f, 6.0f));
  const float specials[] = {0.5f, 1.5f, -2.5f, -0.0f, 1e30f, -1e30f, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); ++i) x[i * 97] = specials[i];
  int failures = 0;
  for (int32_t zero : {0, -128, 127, 3, -1000, 1 << 30}) {
    for (int64_t count : {int64_t{1}, int64_t{15}, int64_t{16}, int64_t{33}, int64_t{1000}}) {
      std::vector<int16_t> a(1000), b(1000);
      const int32_t sum = gemm.quantize_left(x.data(), count, 0.05f, zero, a.data());
      const int32_t portable_sum = gemm.left_type == LeftType::Int16
                                       ? quantize_left_int16_portable(x.data(), count, 0.05f, zero, b.data())
                                       : quantize_left_int8_portable(x.data(), count, 0.05f, zero, b.data());
      const size_t bytes = static_cast<size_t>(count * left_element_size(gemm));
      std::vector<uint8_t> c(1000), d(1000);
      gemm.quantize_bytes(x.data(), count, 0.05f, zero, gemm.panel_bias, c.data());
      quantize_bytes_portable(x.data(), count, 0.05f, zero, gemm.panel_bias, d.data());
      if (sum != portable_sum || !same_bytes(a.data(), b.data(), bytes) ||
          !same_bytes(c.data(), d.data(), static_cast<size_t>(count))) {
        std::printf("quantization of %lld values with zero point %d differs\n", static_cast<long long>(count), zero);
        ++failures;
      }
    }
  }
  // The first 582 values are finite; infinities and a NaN follow.
  for (int64_t count : {int64_t{0}, int64_t{7}, int64_t{16}, int64_t{40}, int64_t{581}, int64_t{583}, int64_t{1000}}) {
    float low, high, portable_low, portable_high;
    const bool finite = gemm.range(x.data(), count, low, high);
    const bool portable_finite = range_portable(x.data(), count, portable_low, portable_high);
    if (finite != portable_finite || finite != (count <= 582) ||
        (finite && (low != portable_low || high != portable_high))) {
      std::printf("range of %lld values differs\n", static_cast<long long>(count));
      ++failures;
    }
  }
  return failures;
}

}  // namespace

int main() {
  const Int8Gemm& gemm = int8_gemm();
  Random random{0x9e3779b97f4a7c15ull};
  const int failures = check_products(gemm, random) + check_quantization(gemm, random);
  std::printf("level %s: %s\n", edgert::kernels::integer_isa_name(gemm.isa), failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}
