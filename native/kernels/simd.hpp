// Vectorized float32 arithmetic written once, for every instruction set the kernels choose
// between at run time (isa.hpp).
//
// The functions below are templates over GCC/Clang vector types (`Width<Lanes>::Float`,
// `Width<Lanes>::Int`): lane-wise IEEE float32 operations, int32 lane masks (-1 true, 0 false)
// for selects, conversions with __builtin_convertvector and bit casts through memcpy. No
// fused multiply-add (the tree builds with -ffp-contract=off) and no approximate instruction:
// every lane of every width computes the same operations in the same order, so a result does
// not depend on the width, i.e. on the processor (docs/kernels.md).
//
// `dispatch(body)` instantiates a loop body three times: at 16 lanes in a function compiled
// for AVX-512 (F, VL, BW, DQ), at 8 lanes for AVX2, and at 4 lanes for the architecture's
// baseline (SSE2 on x86-64, NEON on aarch64), and calls the one kernel_isa() chose. Those
// functions are `flatten`: the body and everything it calls is inlined into them, so the
// generic vector code is compiled for their instruction set. `map` and `map2` are such loops
// over float arrays; their last elements run through the same vector code on a zero-padded
// vector, so there is no separate scalar code to disagree with. The scalar overloads (`exp(float)`
// and so on) run the 4-lane code on a splatted value, for the same reason.
//
// Rules for new code: use only the width the dispatcher passes in (a 16-lane sqrt called from
// the AVX2 body would run AVX-512 instructions); keep integer lanes in range before converting
// (float to int32 conversion of a value out of range is undefined); write constants as float;
// take vectors by const reference in functions and lambdas (`[](const auto& v)`): for a
// 32- or 64-byte parameter by value GCC prints a note on the changed calling convention that
// no pragma silences (returning them by value is fine).
#pragma once

#include <cstdint>
#include <cstring>

#include "isa.hpp"

#if defined(__x86_64__) || defined(__SSE2__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

// Passing a vector wider than the baseline's registers by value changes the calling convention
// (-Wpsabi says so for every 32- and 64-byte vector in a function compiled for the baseline).
// These vectors never cross a call: every function here is inlined into the flattened
// per-ISA functions. Not popped: the warning is reported where templates are instantiated,
// in the file that includes this header.
#pragma GCC diagnostic ignored "-Wpsabi"

#define EDGERT_SIMD_INLINE inline __attribute__((always_inline))

namespace edgert::kernels::simd {

// The vector types of one width: Lanes float32 lanes, their int32 masks, and Lanes bytes
// (bool tensors).
template <int Lanes>
struct Width {
  static constexpr int lanes = Lanes;
  typedef float Float __attribute__((vector_size(4 * Lanes)));
  typedef int32_t Int __attribute__((vector_size(4 * Lanes)));
  typedef uint8_t Byte __attribute__((vector_size(Lanes)));
};

// The int32 mask type of a float vector type (what its comparisons give).
template <class V>
using Mask = decltype(V{} < V{});

template <class V>
constexpr int lanes_of = static_cast<int>(sizeof(V) / sizeof(float));

// ---------------------------------------------------------------- loads, stores, bits

template <class To, class From>
EDGERT_SIMD_INLINE To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  To to;
  std::memcpy(&to, &from, sizeof(to));
  return to;
}

// Every lane set to `value` (bit for bit: -0 stays -0).
template <class V, class T>
EDGERT_SIMD_INLINE V splat(T value) {
  V result;
  for (int i = 0; i < static_cast<int>(sizeof(V) / sizeof(T)); ++i) result[i] = value;
  return result;
}

template <class V>
EDGERT_SIMD_INLINE V load(const float* data) {
  V value;
  std::memcpy(&value, data, sizeof(value));
  return value;
}

// data[0..count) in the first lanes, zeros in the others (count < lanes).
template <class V>
EDGERT_SIMD_INLINE V load_partial(const float* data, int64_t count) {
  float lanes[lanes_of<V>] = {};
  std::memcpy(lanes, data, static_cast<size_t>(count) * sizeof(float));
  return load<V>(lanes);
}

// Step 1: consecutive elements; step 0: one element repeated.
template <class V>
EDGERT_SIMD_INLINE V load_step(const float* data, int64_t step) {
  return step ? load<V>(data) : splat<V>(*data);
}

template <class V>
EDGERT_SIMD_INLINE V load_step_partial(const float* data, int64_t step, int64_t count) {
  return step ? load_partial<V>(data, count) : splat<V>(*data);
}

template <class V>
EDGERT_SIMD_INLINE void store(float* data, const V& value) {
  std::memcpy(data, &value, sizeof(value));
}

template <class V>
EDGERT_SIMD_INLINE void store_partial(float* data, int64_t count, const V& value) {
  float lanes[lanes_of<V>];
  store(lanes, value);
  std::memcpy(data, lanes, static_cast<size_t>(count) * sizeof(float));
}

// ---------------------------------------------------------------- selects, signs, bounds

// Lane-wise mask ? a : b (mask lanes are -1 or 0).
template <class V>
EDGERT_SIMD_INLINE V select(const Mask<V>& mask, const V& a, const V& b) {
  const Mask<V> bits_a = bit_cast<Mask<V>>(a), bits_b = bit_cast<Mask<V>>(b);
  return bit_cast<V>((mask & bits_a) | (~mask & bits_b));
}

template <class V>
EDGERT_SIMD_INLINE Mask<V> is_nan(const V& x) {
  return x != x;
}

// |x| by clearing the sign bit (exact; a NaN stays NaN).
template <class V>
EDGERT_SIMD_INLINE V abs(const V& x) {
  return bit_cast<V>(bit_cast<Mask<V>>(x) & 0x7fffffff);
}

// The magnitude of `magnitude` with the sign bit of `sign`.
template <class V>
EDGERT_SIMD_INLINE V copysign(const V& magnitude, const V& sign) {
  const Mask<V> bits =
      (bit_cast<Mask<V>>(magnitude) & 0x7fffffff) | (bit_cast<Mask<V>>(sign) & static_cast<int32_t>(0x80000000u));
  return bit_cast<V>(bits);
}

// IEEE 754-2019 maximum: a NaN in either input gives that NaN (a's when both are), and +0 is
// greater than -0. Commutative apart from which NaN comes out.
template <class V>
EDGERT_SIMD_INLINE V maximum(const V& a, const V& b) {
  V result = select(a > b, a, b);
  const V zeros_or_equal = bit_cast<V>(bit_cast<Mask<V>>(a) & bit_cast<Mask<V>>(b));
  result = select(a == b, zeros_or_equal, result);  // equal: the same bits, or +0 from ±0
  return select(is_nan(a), a, result);              // a NaN in b came through a > b
}

// IEEE 754-2019 minimum: as maximum, with -0 less than +0.
template <class V>
EDGERT_SIMD_INLINE V minimum(const V& a, const V& b) {
  V result = select(a < b, a, b);
  const V zeros_or_equal = bit_cast<V>(bit_cast<Mask<V>>(a) | bit_cast<Mask<V>>(b));
  result = select(a == b, zeros_or_equal, result);
  return select(is_nan(a), a, result);
}

#if defined(__x86_64__) && !defined(__clang__)
// GCC 12 compiles the generic is_nan, maximum and minimum one lane at a time (a scalar
// comparison and setcc per lane) in the AVX-512 dispatch function when an operand is a
// constant such as the zero vector (hardswish's max(x + 3, 0)), and silu's NaN tests. These
// 16-lane versions are the same operations as mask instructions; like sqrt below they carry
// their target attribute and are inlined by the flattened dispatch function.
__attribute__((target("avx512f,avx512dq"))) inline Width<16>::Int is_nan(const Width<16>::Float& x) {
  const __m512 v = bit_cast<__m512>(x);
  return bit_cast<Width<16>::Int>(_mm512_movm_epi32(_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q)));
}

// as the generic maximum (minimum with `Max` false): a > b (a < b) picks a, equal values
// take the AND (OR) of their bits, a NaN in a comes through last.
template <bool Max>
__attribute__((target("avx512f,avx512dq"))) inline Width<16>::Float extremum16(const Width<16>::Float& a,
                                                                               const Width<16>::Float& b) {
  const __m512 x = bit_cast<__m512>(a), y = bit_cast<__m512>(b);
  __m512 result = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, Max ? _CMP_GT_OQ : _CMP_LT_OQ), y, x);
  const __m512i bits = Max ? _mm512_and_si512(_mm512_castps_si512(x), _mm512_castps_si512(y))
                           : _mm512_or_si512(_mm512_castps_si512(x), _mm512_castps_si512(y));
  result = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_EQ_OQ), result, _mm512_castsi512_ps(bits));
  result = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), result, x);
  return bit_cast<Width<16>::Float>(result);
}

__attribute__((target("avx512f,avx512dq"))) inline Width<16>::Float maximum(const Width<16>::Float& a,
                                                                            const Width<16>::Float& b) {
  return extremum16<true>(a, b);
}

__attribute__((target("avx512f,avx512dq"))) inline Width<16>::Float minimum(const Width<16>::Float& a,
                                                                            const Width<16>::Float& b) {
  return extremum16<false>(a, b);
}
#endif

// The scalar forms of maximum and minimum (no arithmetic, so plain code gives the same
// result as every vector lane).
inline float maximum(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return bit_cast<float>(bit_cast<uint32_t>(a) & bit_cast<uint32_t>(b));
  return a > b ? a : b;
}

inline float minimum(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  if (a == b) return bit_cast<float>(bit_cast<uint32_t>(a) | bit_cast<uint32_t>(b));
  return a < b ? a : b;
}

// ---------------------------------------------------------------- rounding

// x rounded to an integer, halfway cases to even, for |x| <= 2^22 (the argument reductions
// below): adding 1.5·2^23 leaves no fraction bit, subtracting it back is exact.
template <class V>
EDGERT_SIMD_INLINE V round_small(const V& x) {
  return (x + 12582912.0f) - 12582912.0f;
}

// Round half to even over the whole float range (as std::nearbyint in the default rounding
// mode): from 2^23 up every float is an integer; the sign is kept (-0.3 gives -0). (Written
// as a copysign of a select: clang 22 compiles select(m, copysign(r, x), x) at 16 lanes to a
// vpternlogd with a wrong truth table.)
template <class V>
EDGERT_SIMD_INLINE V round_half_even(const V& x) {
  const V magnitude = abs(x);
  const V rounded = (magnitude + 8388608.0f) - 8388608.0f;
  return copysign(select(magnitude < 8388608.0f, rounded, magnitude), x);
}

template <class V>
EDGERT_SIMD_INLINE V floor(const V& x) {
  const V rounded = round_half_even(x);
  return copysign(select(rounded > x, rounded - 1.0f, rounded), x);
}

template <class V>
EDGERT_SIMD_INLINE V ceil(const V& x) {
  const V rounded = round_half_even(x);
  return copysign(select(rounded < x, rounded + 1.0f, rounded), x);
}

// 2^k for integer lanes k in [-126, 127], built from its exponent bits.
template <class V>
EDGERT_SIMD_INLINE V power_of_two(const Mask<V>& k) {
  return bit_cast<V>((k + 127) << 23);
}

// ---------------------------------------------------------------- square root

// The correctly rounded IEEE square root, one instruction per width. Clang has a generic
// one. For GCC the 8- and 16-lane versions carry their instruction set's target attribute
// and are inlined by the flattened dispatch functions; they cannot be always_inline, which
// would inline them first into the (baseline) template that calls them. (Clang rejects such
// a call across target attributes, which is why it takes the generic builtin.)
#if defined(__clang__)
#if __has_builtin(__builtin_elementwise_sqrt)
#define EDGERT_SIMD_GENERIC_SQRT 1
#endif
#endif

#if defined(EDGERT_SIMD_GENERIC_SQRT)
template <class V>
EDGERT_SIMD_INLINE V sqrt(const V& x) {
  return __builtin_elementwise_sqrt(x);
}
#else
#if defined(__x86_64__)
__attribute__((target("avx512f"))) inline Width<16>::Float sqrt(const Width<16>::Float& x) {
  // maskz: GCC 12's plain _mm512_sqrt_ps passes an undefined merge operand.
  return bit_cast<Width<16>::Float>(_mm512_maskz_sqrt_ps(0xffff, bit_cast<__m512>(x)));
}

__attribute__((target("avx2"))) inline Width<8>::Float sqrt(const Width<8>::Float& x) {
  return bit_cast<Width<8>::Float>(_mm256_sqrt_ps(bit_cast<__m256>(x)));
}
#endif

EDGERT_SIMD_INLINE Width<4>::Float sqrt(const Width<4>::Float& x) {
#if defined(__SSE2__)
  return bit_cast<Width<4>::Float>(_mm_sqrt_ps(bit_cast<__m128>(x)));
#elif defined(__aarch64__)
  return bit_cast<Width<4>::Float>(vsqrtq_f32(bit_cast<float32x4_t>(x)));
#else
  Width<4>::Float root;
  for (int i = 0; i < 4; ++i) root[i] = __builtin_sqrtf(x[i]);
  return root;
#endif
}
#endif

// ---------------------------------------------------------------- exp

namespace exp_constants {
constexpr float kLowest = -104.0f;  // e^-104 < 2^-150: rounds to 0
constexpr float kHighest = 89.0f;   // e^89 > FLT_MAX: overflows to inf
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2High = 0.693359375f;    // 9 significant bits: n·kLn2High is exact
constexpr float kLn2Low = -2.12194440e-4f;  // ln2 - kLn2High
// Cephes' expf polynomial for (e^r - 1 - r) / r² on |r| <= ln2/2.
constexpr float kP0 = 1.9875691500e-4f;
constexpr float kP1 = 1.3981999507e-3f;
constexpr float kP2 = 8.3334519073e-3f;
constexpr float kP3 = 4.1665795894e-2f;
constexpr float kP4 = 1.6666665459e-1f;
constexpr float kP5 = 5.0000001201e-1f;
}  // namespace exp_constants

namespace detail {
// e^x · 2^k for integer lanes k in [0, 64]: x = n·ln2 + r (Cody-Waite, |r| <= ln2/2), e^r
// from Cephes' degree-5 polynomial, then two multiplications by 2^((n+k)/2) and
// 2^(n+k - (n+k)/2): the first is exact, the second rounds once, so results below FLT_MIN
// come out as correctly rounded subnormals and results over FLT_MAX as inf. x must not be
// NaN; below -104 - k·ln2 (where the result rounds to 0) x is taken as that bound.
template <class V>
EDGERT_SIMD_INLINE V exp_scaled(const V& x, const Mask<V>& k) {
  using namespace exp_constants;
  const V lowest = kLowest - __builtin_convertvector(k, V) * 0.693147181f;
  V t = select(x < lowest, lowest, x);
  t = select(t > kHighest, splat<V>(kHighest), t);
  const V n = round_small(t * kLog2e);  // in [-150 - k, 128]
  V r = t - n * kLn2High;
  r = r - n * kLn2Low;
  V p = splat<V>(kP0);
  p = p * r + kP1;
  p = p * r + kP2;
  p = p * r + kP3;
  p = p * r + kP4;
  p = p * r + kP5;
  const V e = p * (r * r) + r + 1.0f;
  const Mask<V> total = __builtin_convertvector(n, Mask<V>) + k;  // in [-150, 128 + k]
  const Mask<V> half = total >> 1;                                // both halves in [-75, 96]: normal powers of two
  return (e * power_of_two<V>(half)) * power_of_two<V>(total - half);
}
}  // namespace detail

namespace detail {
// e^x for x in [-87, 88] (results normal floats; no NaN): the arithmetic of exp_scaled with
// k = 0 and one multiplication by 2^n, which gives the same bits in that range.
template <class V>
EDGERT_SIMD_INLINE V exp_normal(const V& x) {
  using namespace exp_constants;
  const V n = round_small(x * kLog2e);
  V r = x - n * kLn2High;
  r = r - n * kLn2Low;
  V p = splat<V>(kP0);
  p = p * r + kP1;
  p = p * r + kP2;
  p = p * r + kP3;
  p = p * r + kP4;
  p = p * r + kP5;
  const V e = p * (r * r) + r + 1.0f;
  return e * power_of_two<V>(__builtin_convertvector(n, Mask<V>));
}
}  // namespace detail

// e^x over the whole float range (detail::exp_scaled with k = 0): gradual underflow to
// subnormals and 0, overflow to inf; NaN stays NaN, -inf gives 0, inf gives inf.
template <class V>
EDGERT_SIMD_INLINE V exp(const V& x) {
  const Mask<V> nan = is_nan(x);
  return select(nan, x, detail::exp_scaled(select(nan, V{}, x), Mask<V>{}));
}

// ---------------------------------------------------------------- log

namespace log_constants {
constexpr float kMinNormal = 1.17549435e-38f;
constexpr float kSqrtHalf = 0.707106781186547524f;
constexpr float kLn2High = 0.693359375f;
constexpr float kLn2Low = -2.12194440e-4f;
// Cephes' logf polynomial for (log(1 + f) - f + f²/2) / f³ on sqrt(1/2) - 1 <= f < sqrt(2) - 1.
constexpr float kP0 = 7.0376836292e-2f;
constexpr float kP1 = -1.1514610310e-1f;
constexpr float kP2 = 1.1676998740e-1f;
constexpr float kP3 = -1.2420140846e-1f;
constexpr float kP4 = 1.4249322787e-1f;
constexpr float kP5 = -1.6668057665e-1f;
constexpr float kP6 = 2.0000714765e-1f;
constexpr float kP7 = -2.4999993993e-1f;
constexpr float kP8 = 3.3333331174e-1f;
}  // namespace log_constants

// The natural logarithm: x = 2^e · m with m in [sqrt(1/2), sqrt(2)) (subnormal x scaled by 2^23
// first), log(m) = f - f²/2 + f³·P(f) with f = m - 1, plus e·ln2 in two parts (Cephes' logf).
// log(±0) = -inf, log(x < 0) = NaN, log(inf) = inf, NaN stays NaN.
template <class V>
EDGERT_SIMD_INLINE V log(const V& x) {
  using namespace log_constants;
  const Mask<V> subnormal = x < kMinNormal;  // zero and negative lanes are replaced below
  const Mask<V> bits = bit_cast<Mask<V>>(select(subnormal, x * 8388608.0f, x));
  Mask<V> exponent = ((bits >> 23) & 0xff) - 126 - (subnormal & 23);
  const V mantissa = bit_cast<V>((bits & 0x007fffff) | 0x3f000000);  // in [0.5, 1)
  const Mask<V> below = mantissa < kSqrtHalf;
  exponent = exponent + below;  // below is -1 where the mantissa is doubled
  const V f = select(below, mantissa + mantissa, mantissa) - 1.0f;
  const V e = __builtin_convertvector(exponent, V);
  const V z = f * f;
  V y = splat<V>(kP0);  // written out: GCC -O2 keeps a loop here as a loop
  y = y * f + kP1;
  y = y * f + kP2;
  y = y * f + kP3;
  y = y * f + kP4;
  y = y * f + kP5;
  y = y * f + kP6;
  y = y * f + kP7;
  y = y * f + kP8;
  y = y * f * z;
  y = y + kLn2Low * e;
  y = y - 0.5f * z;
  V result = f + y;
  result = result + kLn2High * e;
  result = select(x == __builtin_inff(), x, result);
  result = select(x == 0.0f, splat<V>(-__builtin_inff()), result);
  result = select(x < 0.0f, splat<V>(__builtin_nanf("")), result);
  return select(is_nan(x), x, result);
}

// ---------------------------------------------------------------- tanh, sigmoid

// tanh: for |x| < 0.625 Cephes' odd polynomial x + x³·P(x²), above it 1 - 2 / (e^(2|x|) + 1)
// with 2|x| capped at 18.2 (from 9.1 on the result rounds to 1); the sign of x put back last,
// so tanh(-0) = -0. A NaN takes the polynomial, which keeps it.
template <class V>
EDGERT_SIMD_INLINE V tanh(const V& x) {
  const V a = abs(x);
  const V z = a * a;
  V p = splat<V>(-5.70498872745e-3f);
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  const V small = p * z * a + a;
  const V twice = a + a;
  const V capped = select(twice < 18.2f, twice, splat<V>(18.2f));  // NaN too: its lane is small
  const V large = 1.0f - 2.0f / (detail::exp_normal(capped) + 1.0f);
  return copysign(select(a >= 0.625f, large, small), x);
}

// 1 / (1 + e^-x); below -80, where 1 + e^-x is e^-x to float precision, as e^x (which
// keeps its precision down to the subnormals instead of overflowing). NaN stays NaN.
template <class V>
EDGERT_SIMD_INLINE V sigmoid(const V& x) {
  const Mask<V> tiny = x < -80.0f;
  const V e = exp(select(tiny, x, -x));  // e^-x; e^x below -80
  return select(tiny, e, splat<V>(1.0f)) / (1.0f + e);
}

// x / (1 + e^-x) (torch's formula); below -80 as (x · e^x·2^64) · 2^-64, so that nothing
// overflows and the small results keep their precision down to the subnormals; below -110
// the result is -0 (|x·e^x| is under half the smallest subnormal there). NaN stays NaN;
// silu(-inf) is NaN (-inf · sigmoid(-inf) = -inf · 0, as torch).
template <class V>
EDGERT_SIMD_INLINE V silu(const V& x) {
  const Mask<V> nan = is_nan(x), tiny = x < -80.0f;
  const V e = detail::exp_scaled(select(nan, V{}, select(tiny, x, -x)), tiny & 64);
  V result = select(tiny, (x * e) * 0x1p-64f, x / (1.0f + e));
  result = select(x < -110.0f, splat<V>(-0.0f), result);
  return select(nan | (x == -__builtin_inff()), splat<V>(__builtin_nanf("")), result);
}

// ---------------------------------------------------------------- erf

// erf as Cephes' erff: below |x| = 1, x·T(x²) (as x + x·(T(x²) - 1)); from 1 on, 1 - erfc(|x|) with erfc(a) =
// (e^(-a²) · (1/a)) · P(1/a²) (P below 2, R from 2 on; a capped at 4, where erf rounds to 1);
// the sign of x put back last, so erf(-0) = -0. ±inf gives ±1; NaN takes the polynomial,
// which keeps it.
template <class V>
EDGERT_SIMD_INLINE V erf(const V& x) {
  const V a = abs(x);
  const V z = a * a;
  V t = splat<V>(7.853861353153693e-5f);
  t = t * z - 8.010193625184903e-4f;
  t = t * z + 5.188327685732524e-3f;
  t = t * z - 2.685381193529856e-2f;
  t = t * z + 1.128358514861418e-1f;
  t = t * z - 3.761262582423300e-1f;
  t = t * z + 1.28379165726710e-1f;  // T's last coefficient less 1: a + a·t rounds once more
  const V small = a + a * t;
  const V b = select(a < 4.0f, a, splat<V>(4.0f));
  const V q = 1.0f / b;
  const V y = q * q;
  V p = splat<V>(2.326819970068386e-2f);
  p = p * y - 1.387039388740657e-1f;
  p = p * y + 3.687424674597105e-1f;
  p = p * y - 5.824733027278666e-1f;
  p = p * y + 6.210004621745983e-1f;
  p = p * y - 4.944515323274145e-1f;
  p = p * y + 3.404879937665872e-1f;
  p = p * y - 2.741127028184656e-1f;
  p = p * y + 5.638259427386472e-1f;
  V r = splat<V>(-1.047766399936249e1f);
  r = r * y + 1.297719955372516e1f;
  r = r * y - 7.495518717768503e0f;
  r = r * y + 2.921019019210786e0f;
  r = r * y - 1.015265279202700e0f;
  r = r * y + 4.218463358204948e-1f;
  r = r * y - 2.820767439740514e-1f;
  r = r * y + 5.641895067754075e-1f;
  const V erfc = (detail::exp_normal(-(b * b)) * q) * select(b < 2.0f, p, r);
  return copysign(select(a >= 1.0f, 1.0f - erfc, small), x);
}

// ---------------------------------------------------------------- scalar versions

// One float through the 4-lane code: the same bits as every vector lane.
template <class Fn>
EDGERT_SIMD_INLINE float scalar(float x, Fn fn) {
  return fn(splat<Width<4>::Float>(x))[0];
}

EDGERT_SIMD_INLINE float exp(float x) {
  return scalar(x, [](const auto& v) { return exp(v); });
}
EDGERT_SIMD_INLINE float log(float x) {
  return scalar(x, [](const auto& v) { return log(v); });
}
EDGERT_SIMD_INLINE float tanh(float x) {
  return scalar(x, [](const auto& v) { return tanh(v); });
}
EDGERT_SIMD_INLINE float sigmoid(float x) {
  return scalar(x, [](const auto& v) { return sigmoid(v); });
}
EDGERT_SIMD_INLINE float silu(float x) {
  return scalar(x, [](const auto& v) { return silu(v); });
}
EDGERT_SIMD_INLINE float erf(float x) {
  return scalar(x, [](const auto& v) { return erf(v); });
}

// ---------------------------------------------------------------- dispatch

namespace detail {
#if defined(__x86_64__)
template <class Body>
__attribute__((target("avx512f,avx512vl,avx512bw,avx512dq"), flatten)) inline void run_avx512(Body& body) {
  body(Width<16>{});
}

template <class Body>
__attribute__((target("avx2"), flatten)) inline void run_avx2(Body& body) {
  body(Width<8>{});
}
#endif

template <class Body>
__attribute__((flatten)) inline void run_baseline(Body& body) {
  body(Width<4>{});
}
}  // namespace detail

// Calls body(Width<16>{}), body(Width<8>{}) or body(Width<4>{}), compiled for AVX-512, AVX2 or
// the baseline, whichever kernel_isa() chose. body is typically a generic lambda
// `[&](auto width) { using V = typename decltype(width)::Float; ... }`.
template <class Body>
inline void dispatch(Body&& body) {
#if defined(__x86_64__)
  switch (kernel_isa()) {
    case Isa::Avx512: return detail::run_avx512(body);
    case Isa::Avx2: return detail::run_avx2(body);
    case Isa::Portable: break;
  }
#endif
  detail::run_baseline(body);
}

// out[i] = fn(x[i]) for i < count, fn a generic function of one float vector (out may be x).
template <class Fn>
inline void map(const float* x, float* out, int64_t count, Fn fn) {
  dispatch([x, out, count, &fn](auto width) {  // copies: the loop keeps them in registers
    using V = typename decltype(width)::Float;
    constexpr int64_t kLanes = decltype(width)::lanes;
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) store(out + i, fn(load<V>(x + i)));
    if (i < count) store_partial(out + i, count - i, fn(load_partial<V>(x + i, count - i)));
  });
}

// out[i] = fn(a[i · a_step], b[i · b_step]) for i < count; each step is 0 (one value
// repeated) or 1. out may be a or b.
template <class Fn>
inline void map2(const float* a, int64_t a_step, const float* b, int64_t b_step, float* out, int64_t count, Fn fn) {
  dispatch([a, a_step, b, b_step, out, count, &fn](auto width) {  // copies, as in map
    using V = typename decltype(width)::Float;
    constexpr int64_t kLanes = decltype(width)::lanes;
    int64_t i = 0;
    for (; i + kLanes <= count; i += kLanes) {
      store(out + i, fn(load_step<V>(a + i * a_step, a_step), load_step<V>(b + i * b_step, b_step)));
    }
    if (i < count) {
      const int64_t rest = count - i;
      store_partial(
          out + i, rest,
          fn(load_step_partial<V>(a + i * a_step, a_step, rest), load_step_partial<V>(b + i * b_step, b_step, rest)));
    }
  });
}

}  // namespace edgert::kernels::simd
