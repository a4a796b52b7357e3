// Float32 loops the elementwise and normalization kernels share, vectorized for the
// instruction set chosen at run time (isa.hpp). Every path computes each element with the
// same operations in the same order, so the results are the same bytes on every processor.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace edgert::kernels {

// Max is std::max(a, b): (a < b) ? b : a, so a NaN in b is ignored and one in a kept.
enum class BinaryOp { Add, Sub, Mul, Div, Max };

// out[i] = a[i * a_step] op b[i * b_step] for i < count; each step is 0 (one value repeated)
// or 1. out may be a or b.
void binary_floats(BinaryOp op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out,
                   int64_t count);

// out[i] = x[i] > 0 ? x[i] : 0 (NaN gives 0).
void relu_floats(const float* x, float* out, int64_t count);

// std::max over x[0..count) (count >= 1); which NaN or signed zero it returns may differ
// from a left-to-right fold, which softmax's results do not depend on.
float max_of_floats(const float* x, int64_t count);

// out[i] = exp_nonpositive(x[i] - shift[i * shift_step]); shift_step is 0 or 1.
void exp_of_differences(const float* x, const float* shift, int64_t shift_step, float* out, int64_t count);

// sums[r] = ((x_r[0] + x_r[1]) + x_r[2]) + ... in float32 from +0, for the `rows` rows
// x_r = x + r * stride of `count` elements each. Rows are summed side by side, four at a
// time, so their additions overlap; each row's own order is unchanged.
void sum_rows_in_order(const float* x, int64_t stride, int64_t rows, int64_t count, float* sums);

// e^x in float32 for x <= 0, the exponential of softmax (x - max never exceeds 0).
// Cody-Waite reduction x = n·ln2 + r with |r| <= ln2/2, then Cephes' degree-5 polynomial
// for e^r and the exponent n put in by integer arithmetic; separate multiplies and adds, in
// this order, in every vectorized version. Below ln(FLT_MIN) the result is 0 (std::exp
// would give a subnormal under 1.2e-38); NaN stays NaN. Relative error under 2^-22 (4 ulp
// bound; docs/kernels.md gives the measured maximum).
namespace exp_constants {
constexpr float kLowest = -87.33654f;  // ln(FLT_MIN), rounded up
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2High = 0.693359375f;    // 8 significant bits: n·kLn2High is exact
constexpr float kLn2Low = -2.12194440e-4f;  // ln2 - kLn2High
constexpr float kP0 = 1.9875691500e-4f;
constexpr float kP1 = 1.3981999507e-3f;
constexpr float kP2 = 8.3334519073e-3f;
constexpr float kP3 = 4.1665795894e-2f;
constexpr float kP4 = 1.6666665459e-1f;
constexpr float kP5 = 5.0000001201e-1f;
}  // namespace exp_constants

inline float exp_nonpositive(float x) {
  using namespace exp_constants;
  if (std::isnan(x)) return x;
  if (x < kLowest) return 0.0f;
  const float n = std::nearbyint(x * kLog2e);
  float r = x - n * kLn2High;
  r = r - n * kLn2Low;
  float p = kP0;
  p = p * r + kP1;
  p = p * r + kP2;
  p = p * r + kP3;
  p = p * r + kP4;
  p = p * r + kP5;
  const float e = p * (r * r) + r + 1.0f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) * (int32_t{1} << 23);
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return e * scale;
}

}  // namespace edgert::kernels
