// Run-time choice of the kernels' instruction set (see isa.hpp).
#include "isa.hpp"

#include <cstdlib>
#include <cstring>

namespace edgert::kernels {
namespace {

Isa best_supported() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // AVX-512 here means the F, VL, BW and DQ subsets together (Skylake-SP, Zen 4 and later).
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq")) {
    return Isa::Avx512;
  }
  if (__builtin_cpu_supports("avx2")) return Isa::Avx2;
#endif
  return Isa::Portable;
}

Isa requested(Isa best) {
  const char* name = std::getenv("EDGERT_KERNELS_ISA");
  if (name == nullptr || *name == '\0') return best;
  Isa wanted = best;
  if (std::strcmp(name, "portable") == 0) wanted = Isa::Portable;
  else if (std::strcmp(name, "avx2") == 0) wanted = Isa::Avx2;
  else if (std::strcmp(name, "avx512") == 0) wanted = Isa::Avx512;
  return static_cast<int>(wanted) < static_cast<int>(best) ? wanted : best;
}

}  // namespace

Isa kernel_isa() {
  static const Isa chosen = requested(best_supported());
  return chosen;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Avx512: return "avx512";
    case Isa::Avx2: return "avx2";
    case Isa::Portable: break;
  }
  return "portable";
}

}  // namespace edgert::kernels
