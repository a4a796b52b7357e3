// The loops of vector_math.hpp: a portable version (plain C++, what the compiler makes of it
// for the architecture's baseline) and an AVX2 version for x86-64 processors that have it,
// plus an AVX-512 exp. The vector versions finish each loop's last elements with the
// narrower code.
#include "vector_math.hpp"

#include <algorithm>
#include <cstring>

#include "isa.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

// The portable loops also finish the AVX2 and AVX-512 loops' last elements: inlined there,
// since a call from AVX code into baseline (SSE) code costs more than a short row on some
// processors (the switch between the two register states), and rows of 7 to 56 elements
// (a convolution's channel rows broadcast against a per-channel scale) are common.
#define EDGERT_BASELINE_TAIL inline __attribute__((always_inline))

namespace edgert::kernels {
namespace {

// The portable loops work on four lanes in GCC/Clang vector types: SSE2 on x86-64, NEON on
// aarch64. Lane-wise IEEE operations give the same results as the scalar ones.
typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));

Float4 load4(const float* data, int64_t step) {
  if (step == 0) return Float4{} + *data;
  Float4 value;
  std::memcpy(&value, data, sizeof(value));
  return value;
}

void store4(float* data, Float4 value) {
  std::memcpy(data, &value, sizeof(value));
}

// Max as std::max(a, b) has it, lane by lane: b where a < b, else a.
float maximum(float a, float b) {
  return std::max(a, b);
}

Float4 maximum(Float4 a, Float4 b) {
  const Int4 take_b = a < b;
  return (Float4)((take_b & (Int4)b) | (~take_b & (Int4)a));
}

// One element (float) or four lanes (Float4) of a binary operator.
template <BinaryOp Op, class T>
T apply(T a, T b) {
  if constexpr (Op == BinaryOp::Add)
    return a + b;
  else if constexpr (Op == BinaryOp::Sub)
    return a - b;
  else if constexpr (Op == BinaryOp::Mul)
    return a * b;
  else if constexpr (Op == BinaryOp::Div)
    return a / b;
  else
    return maximum(a, b);
}

template <BinaryOp Op>
EDGERT_BASELINE_TAIL void binary_portable(const float* a, int64_t a_step, const float* b, int64_t b_step, float* out,
                                          int64_t count) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    store4(out + i, apply<Op>(load4(a + i * a_step, a_step), load4(b + i * b_step, b_step)));
  }
  for (; i < count; ++i) out[i] = apply<Op>(a[i * a_step], b[i * b_step]);
}

EDGERT_BASELINE_TAIL void relu_portable(const float* x, float* out, int64_t count) {
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const Float4 value = load4(x + i, 1);
    store4(out + i, (Float4)((Int4)value & (value > Float4{})));
  }
  for (; i < count; ++i) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

EDGERT_BASELINE_TAIL float max_portable(const float* x, int64_t count) {
  float result = x[0];
  for (int64_t i = 1; i < count; ++i) result = std::max(result, x[i]);
  return result;
}

EDGERT_BASELINE_TAIL void exp_portable(const float* x, const float* shift, int64_t shift_step, float* out,
                                       int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = exp_nonpositive(x[i] - shift[i * shift_step]);
}

#if defined(__x86_64__)

template <BinaryOp Op>
__attribute__((target("avx2"))) __m256 apply8(__m256 a, __m256 b) {
  if constexpr (Op == BinaryOp::Add)
    return _mm256_add_ps(a, b);
  else if constexpr (Op == BinaryOp::Sub)
    return _mm256_sub_ps(a, b);
  else if constexpr (Op == BinaryOp::Mul)
    return _mm256_mul_ps(a, b);
  else if constexpr (Op == BinaryOp::Div)
    return _mm256_div_ps(a, b);
  else
    return _mm256_max_ps(b, a);  // b > a ? b : a, and a when either is NaN
}

__attribute__((target("avx2"))) __m256 load8(const float* data, int64_t step) {
  return step ? _mm256_loadu_ps(data) : _mm256_set1_ps(*data);
}

template <BinaryOp Op>
__attribute__((target("avx2"))) void binary_avx2(const float* a, int64_t a_step, const float* b, int64_t b_step,
                                                 float* out, int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(out + i, apply8<Op>(load8(a + i * a_step, a_step), load8(b + i * b_step, b_step)));
  }
  binary_portable<Op>(a + i * a_step, a_step, b + i * b_step, b_step, out + i, count - i);
}

__attribute__((target("avx2"))) void relu_avx2(const float* x, float* out, int64_t count) {
  const __m256 zero = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) _mm256_storeu_ps(out + i, _mm256_max_ps(_mm256_loadu_ps(x + i), zero));
  relu_portable(x + i, out + i, count - i);
}

__attribute__((target("avx2"))) float max_avx2(const float* x, int64_t count) {
  if (count < 8) return max_portable(x, count);
  __m256 lanes = _mm256_loadu_ps(x);
  int64_t i = 8;
  for (; i + 8 <= count; i += 8) lanes = _mm256_max_ps(_mm256_loadu_ps(x + i), lanes);
  alignas(32) float values[8];
  _mm256_store_ps(values, lanes);
  float result = max_portable(values, 8);
  for (; i < count; ++i) result = std::max(result, x[i]);
  return result;
}

// exp_nonpositive on eight lanes: the same operations, in the same order.
__attribute__((target("avx2"))) __m256 exp8(__m256 x) {
  using namespace exp_constants;
  const __m256 is_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 is_low = _mm256_cmp_ps(x, _mm256_set1_ps(kLowest), _CMP_LT_OQ);
  const __m256 in_range = _mm256_max_ps(x, _mm256_set1_ps(kLowest));
  const __m256 n =
      _mm256_round_ps(_mm256_mul_ps(in_range, _mm256_set1_ps(kLog2e)), _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_sub_ps(in_range, _mm256_mul_ps(n, _mm256_set1_ps(kLn2High)));
  r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Low)));
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP1));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP2));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP3));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP4));
  p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(kP5));
  __m256 e = _mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), r);
  e = _mm256_add_ps(e, _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 result = _mm256_mul_ps(e, _mm256_castsi256_ps(bits));
  result = _mm256_blendv_ps(result, _mm256_setzero_ps(), is_low);
  return _mm256_blendv_ps(result, x, is_nan);
}

__attribute__((target("avx2"))) void exp_avx2(const float* x, const float* shift, int64_t shift_step, float* out,
                                              int64_t count) {
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    _mm256_storeu_ps(out + i, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), load8(shift + i * shift_step, shift_step))));
  }
  exp_portable(x + i, shift + i * shift_step, shift_step, out + i, count - i);
}

// GCC 12's AVX-512 intrinsics pass _mm512_undefined_*() as their unused merge operand, which
// -Wmaybe-uninitialized reports at every use.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// exp_nonpositive on sixteen lanes (AVX-512F): the same operations, in the same order.
__attribute__((target("avx512f"))) __m512 exp16(__m512 x) {
  using namespace exp_constants;
  const __mmask16 is_nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __mmask16 is_low = _mm512_cmp_ps_mask(x, _mm512_set1_ps(kLowest), _CMP_LT_OQ);
  const __m512 in_range = _mm512_mask_blend_ps(is_low | is_nan, x, _mm512_set1_ps(kLowest));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(in_range, _mm512_set1_ps(kLog2e)),
                                        _MM_FROUND_CUR_DIRECTION | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_sub_ps(in_range, _mm512_mul_ps(n, _mm512_set1_ps(kLn2High)));
  r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(kLn2Low)));
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP1));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP2));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP3));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP4));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(kP5));
  __m512 e = _mm512_add_ps(_mm512_mul_ps(p, _mm512_mul_ps(r, r)), r);
  e = _mm512_add_ps(e, _mm512_set1_ps(1.0f));
  const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  __m512 result = _mm512_mul_ps(e, _mm512_castsi512_ps(bits));
  result = _mm512_mask_blend_ps(is_low, result, _mm512_setzero_ps());
  return _mm512_mask_blend_ps(is_nan, result, x);
}

__attribute__((target("avx512f"))) void exp_avx512(const float* x, const float* shift, int64_t shift_step, float* out,
                                                   int64_t count) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m512 subtrahend = shift_step ? _mm512_loadu_ps(shift + i) : _mm512_set1_ps(*shift);
    _mm512_storeu_ps(out + i, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), subtrahend)));
  }
  exp_avx2(x + i, shift + i * shift_step, shift_step, out + i, count - i);
}

#pragma GCC diagnostic pop

bool use_avx2() {
  return kernel_isa() != Isa::Portable;
}
#endif

template <BinaryOp Op>
void binary_of(const float* a, int64_t a_step, const float* b, int64_t b_step, float* out, int64_t count) {
#if defined(__x86_64__)
  if (use_avx2()) return binary_avx2<Op>(a, a_step, b, b_step, out, count);
#endif
  binary_portable<Op>(a, a_step, b, b_step, out, count);
}

}  // namespace

void binary_floats(BinaryOp op, const float* a, int64_t a_step, const float* b, int64_t b_step, float* out,
                   int64_t count) {
  switch (op) {
    case BinaryOp::Add: return binary_of<BinaryOp::Add>(a, a_step, b, b_step, out, count);
    case BinaryOp::Sub: return binary_of<BinaryOp::Sub>(a, a_step, b, b_step, out, count);
    case BinaryOp::Mul: return binary_of<BinaryOp::Mul>(a, a_step, b, b_step, out, count);
    case BinaryOp::Div: return binary_of<BinaryOp::Div>(a, a_step, b, b_step, out, count);
    case BinaryOp::Max: return binary_of<BinaryOp::Max>(a, a_step, b, b_step, out, count);
  }
}

void relu_floats(const float* x, float* out, int64_t count) {
#if defined(__x86_64__)
  if (use_avx2()) return relu_avx2(x, out, count);
#endif
  relu_portable(x, out, count);
}

float max_of_floats(const float* x, int64_t count) {
#if defined(__x86_64__)
  if (use_avx2()) return max_avx2(x, count);
#endif
  return max_portable(x, count);
}

void exp_of_differences(const float* x, const float* shift, int64_t shift_step, float* out, int64_t count) {
#if defined(__x86_64__)
  if (kernel_isa() == Isa::Avx512) return exp_avx512(x, shift, shift_step, out, count);
  if (use_avx2()) return exp_avx2(x, shift, shift_step, out, count);
#endif
  exp_portable(x, shift, shift_step, out, count);
}

void sum_rows_in_order(const float* x, int64_t stride, int64_t rows, int64_t count, float* sums) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* row = x + r * stride;
    float sum0 = 0.0f, sum1 = 0.0f, sum2 = 0.0f, sum3 = 0.0f;
    for (int64_t i = 0; i < count; ++i) {
      sum0 += row[i];
      sum1 += row[stride + i];
      sum2 += row[2 * stride + i];
      sum3 += row[3 * stride + i];
    }
    sums[r] = sum0, sums[r + 1] = sum1, sums[r + 2] = sum2, sums[r + 3] = sum3;
  }
  for (; r < rows; ++r) {
    float sum = 0.0f;
    for (int64_t i = 0; i < count; ++i) sum += x[r * stride + i];
    sums[r] = sum;
  }
}

}  // namespace edgert::kernels
