// Every function of simd.hpp the kernels use, at every width the processor runs: the same
// bits at every width (NaN payloads aside) and the largest error in ulps against a double
// reference, over the float32 bit patterns 0, step, 2·step, ... (argument 1; step 1 is every
// float, the measurement docs/kernels.md reports) and special values. Argument 2 "all" runs
// every width whatever the processor reports.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

#include "simd.hpp"

namespace edgert::kernels {
Isa kernel_isa() { return Isa::Portable; }  // unused: the widths are called directly
}  // namespace edgert::kernels

using namespace edgert::kernels;

namespace {

bool same_bits(float a, float b) {
  if (a != a && b != b) return true;
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

// The error of `got` in units of the last place of float32 at `exact`.
double ulps(double got, double exact) {
  if (std::isnan(exact) || std::isnan(got)) return std::isnan(exact) == std::isnan(got) ? 0 : 1e9;
  const double rounded = static_cast<float>(exact);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0 : 1e9;
  int exponent = 0;
  std::frexp(std::fmax(std::fabs(exact), FLT_MIN), &exponent);
  return std::fabs(got - exact) / std::ldexp(1.0, std::min(exponent, 128) - 24);
}

struct Check {
  const char* name;
  double bound;  // ulps
  long width_mismatches = 0;
  double worst = 0;
  float worst_at = 0;
};

template <class Fn>
void outputs_at_width(int lanes, const std::vector<float>& x, std::vector<float>& out, Fn fn) {
  auto body = [&](auto width) {
    using V = typename decltype(width)::Float;
    constexpr int kLanes = decltype(width)::lanes;
    for (size_t i = 0; i + kLanes <= x.size(); i += kLanes) simd::store(out.data() + i, fn(simd::load<V>(x.data() + i)));
  };
#if defined(__x86_64__)
  if (lanes == 16) return simd::detail::run_avx512(body);
  if (lanes == 8) return simd::detail::run_avx2(body);
#endif
  (void)lanes;  // the baseline is the only width elsewhere
  simd::detail::run_baseline(body);
}

template <class Fn, class Reference>
void check(Check& check, const std::vector<int>& widths, const std::vector<float>& x, Fn fn,
           Reference reference) {
  std::vector<float> base(x.size()), other(x.size());
  outputs_at_width(4, x, base, fn);
  for (int lanes : widths) {
    outputs_at_width(lanes, x, other, fn);
    for (size_t i = 0; i < x.size(); ++i) check.width_mismatches += !same_bits(base[i], other[i]);
  }
  for (size_t i = 0; i < x.size(); ++i) {
    const double error = ulps(base[i], reference(x[i]));
    if (error > check.worst) check.worst = error, check.worst_at = x[i];
  }
}

float hard(float x) { return x != x ? x : std::min(std::max(x + 3.0f, 0.0f), 6.0f); }

template <class V>
std::decay_t<V> splat(float value) { return simd::splat<std::decay_t<V>>(value); }

Check checks[] = {{"exp", 1}, {"log", 1}, {"tanh", 1.5}, {"sigmoid", 2.5}, {"silu", 2.5},
                  {"hardswish", 0}, {"hardsigmoid", 0}, {"sqrt", 0}, {"rsqrt", 1.5},
                  {"reciprocal", 0}, {"floor", 0}, {"ceil", 0}, {"round", 0}, {"abs", 0},
                  {"neg", 0}, {"maximum", 0}, {"minimum", 0}, {"clamp", 0}, {"erf", 2.5}};

void check_all(const std::vector<int>& widths, const std::vector<float>& x) {
  Check* c = checks;
  check(*c++, widths, x, [](const auto& v) { return simd::exp(v); }, [](double v) { return std::exp(v); });
  check(*c++, widths, x, [](const auto& v) { return simd::log(v); }, [](double v) { return std::log(v); });
  check(*c++, widths, x, [](const auto& v) { return simd::tanh(v); }, [](double v) { return std::tanh(v); });
  check(*c++, widths, x, [](const auto& v) { return simd::sigmoid(v); }, [](double v) { return 1 / (1 + std::exp(-v)); });
  check(*c++, widths, x, [](const auto& v) { return simd::silu(v); }, [](double v) { return v / (1 + std::exp(-v)); });
  check(*c++, widths, x,
        [](const auto& v) { return v * simd::minimum(simd::maximum(v + 3.0f, splat<decltype(v)>(0)), splat<decltype(v)>(6)) / 6.0f; },
        [](double v) { const float f = static_cast<float>(v); return f * hard(f) / 6.0f; });
  check(*c++, widths, x,
        [](const auto& v) { return simd::minimum(simd::maximum(v + 3.0f, splat<decltype(v)>(0)), splat<decltype(v)>(6)) / 6.0f; },
        [](double v) { return hard(static_cast<float>(v)) / 6.0f; });
  check(*c++, widths, x, [](const auto& v) { return simd::sqrt(v); }, [](double v) { return std::sqrt(static_cast<float>(v)); });
  check(*c++, widths, x, [](const auto& v) { return 1.0f / simd::sqrt(v); }, [](double v) { return 1.0 / std::sqrt(v); });
  check(*c++, widths, x, [](const auto& v) { return 1.0f / v; }, [](double v) { return 1.0f / static_cast<float>(v); });
  check(*c++, widths, x, [](const auto& v) { return simd::floor(v); }, [](double v) { return std::floor(v); });
  check(*c++, widths, x, [](const auto& v) { return simd::ceil(v); }, [](double v) { return std::ceil(v); });
  check(*c++, widths, x, [](const auto& v) { return simd::round_half_even(v); }, [](double v) { return std::nearbyint(v); });
  check(*c++, widths, x, [](const auto& v) { return simd::abs(v); }, [](double v) { return std::fabs(v); });
  check(*c++, widths, x, [](const auto& v) { return -v; }, [](double v) { return -v; });
  // b = x · -0.5 in float: one of a, b is negative unless both are ±0.
  check(*c++, widths, x, [](const auto& v) { return simd::maximum(v, v * -0.5f); },
        [](double v) { const float a = static_cast<float>(v), b = a * -0.5f; return a != a ? a : a == b ? 0.0f : std::max(a, b); });
  check(*c++, widths, x, [](const auto& v) { return simd::minimum(v, v * -0.5f); },
        [](double v) { const float a = static_cast<float>(v), b = a * -0.5f; return a != a ? a : a == b ? -0.0f : std::min(a, b); });
  check(*c++, widths, x, [](const auto& v) { return simd::minimum(simd::maximum(v, splat<decltype(v)>(-1.5f)), splat<decltype(v)>(2)); },
        [](double v) { return std::isnan(v) ? v : std::min(std::max(v, -1.5), 2.0); });
  check(*c++, widths, x, [](const auto& v) { return simd::erf(v); }, [](double v) { return std::erf(v); });
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t step = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4093;
  std::vector<int> widths = {4};
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool all = argc > 2 && std::strcmp(argv[2], "all") == 0;
  if (all || __builtin_cpu_supports("avx2")) widths.push_back(8);
  if (all || (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
              __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))) widths.push_back(16);
#endif
  std::vector<float> x = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MIN, -FLT_MIN, FLT_MAX,
                          -FLT_MAX, 1e-45f, -1e-45f, 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 88.72283f,
                          88.72284f, -103.97f, -87.34f, 8388607.5f, -8388607.5f, 0.625f, -3.0f, 3.0f};
  const uint64_t chunk = step << 20;  // a million values at a time
  for (uint64_t first = 0; first < (uint64_t{1} << 32); first += chunk) {
    for (uint64_t bits = first; bits < std::min(first + chunk, uint64_t{1} << 32); bits += step) {
      const uint32_t pattern = static_cast<uint32_t>(bits);
      float value;
      std::memcpy(&value, &pattern, sizeof(value));
      x.push_back(value);
    }
    while (x.size() % 16) x.push_back(1.0f);
    check_all(widths, x);
    x.clear();
  }
  int failures = 0;
  for (const Check& done : checks) {
    const bool ok = done.width_mismatches == 0 && done.worst <= done.bound;
    failures += !ok;
    std::printf("%s %s max_ulp %.3f at %a width_mismatches %ld\n", ok ? "OK" : "FAIL", done.name,
                done.worst, done.worst_at, done.width_mismatches);
  }
  return failures ? 1 : 0;
}
