// Run-time choice of the kernels' instruction set (see isa.hpp).
#include "isa.hpp"

#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <cstdint>
#if defined(__APPLE__)
#include <sys/sysctl.h>
#endif
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)  // the kernel's value; older C libraries do not name it
#endif
#elif defined(__aarch64__) && defined(__APPLE__)
#include <sys/sysctl.h>
#endif

namespace edgert::kernels {
namespace {

#if defined(__x86_64__)
// What the processor and the operating system together support. Read from cpuid and XCR0
// directly rather than __builtin_cpu_supports, whose run-time support is missing from some
// toolchains' runtime libraries (zig's, for the macOS and Windows wheels, answers "no" to
// everything). AVX-512 here means the F, VL, BW and DQ subsets together (Skylake-SP, Zen 4).
struct X86Features {
  bool avx2 = false;
  bool avx512 = false;
  bool avx512vnni = false;
};

#if defined(__APPLE__)
// macOS enables the AVX-512 register state on a thread's first use, so XCR0 understates
// it; the kernel reports the features itself.
bool sysctl_flag(const char* name) {
  int value = 0;
  size_t size = sizeof(value);
  return sysctlbyname(name, &value, &size, nullptr, 0) == 0 && value != 0;
}

X86Features detect_x86() {
  X86Features found;
  found.avx2 = sysctl_flag("hw.optional.avx2_0");
  found.avx512 = sysctl_flag("hw.optional.avx512f") && sysctl_flag("hw.optional.avx512vl") &&
                 sysctl_flag("hw.optional.avx512bw") && sysctl_flag("hw.optional.avx512dq");
  found.avx512vnni = found.avx512 && sysctl_flag("hw.optional.avx512vnni");
  return found;
}
#else
uint64_t extended_state_enabled() {
  uint32_t low = 0, high = 0;
  __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return (static_cast<uint64_t>(high) << 32) | low;
}

X86Features detect_x86() {
  X86Features found;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return found;
  const bool saves_state = (c & (1u << 27)) != 0 && (c & (1u << 28)) != 0;  // OSXSAVE, AVX
  if (!saves_state) return found;
  const uint64_t enabled = extended_state_enabled();
  const bool ymm = (enabled & 0x6) == 0x6;    // SSE and AVX state
  const bool zmm = (enabled & 0xe6) == 0xe6;  // and the opmask and upper ZMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return found;
  found.avx2 = ymm && (b & (1u << 5)) != 0;
  found.avx512 = zmm && (b & (1u << 16)) != 0 && (b & (1u << 17)) != 0 && (b & (1u << 30)) != 0 &&
                 (b & (1u << 31)) != 0;  // F, DQ, BW, VL
  found.avx512vnni = found.avx512 && (c & (1u << 11)) != 0;
  return found;
}
#endif

const X86Features& x86_features() {
  static const X86Features found = detect_x86();
  return found;
}
#endif

Isa best_supported() {
#if defined(__x86_64__)
  if (x86_features().avx512) return Isa::Avx512;
  if (x86_features().avx2) return Isa::Avx2;
#endif
  return Isa::Portable;
}

const char* requested_name() {
  const char* name = std::getenv("EDGERT_KERNELS_ISA");
  return name == nullptr || *name == '\0' ? nullptr : name;
}

Isa requested(Isa best) {
  const char* name = requested_name();
  if (name == nullptr) return best;
  Isa wanted = best;
  if (std::strcmp(name, "portable") == 0 || std::strcmp(name, "dotprod") == 0)
    wanted = Isa::Portable;
  else if (std::strcmp(name, "avx2") == 0)
    wanted = Isa::Avx2;
  else if (std::strcmp(name, "avx512") == 0 || std::strcmp(name, "avx512vnni") == 0)
    wanted = Isa::Avx512;
  return static_cast<int>(wanted) < static_cast<int>(best) ? wanted : best;
}

#if !defined(__x86_64__)
// Whether the processor has aarch64's dot-product instructions (sdot, udot).
bool has_dotprod() {
#if defined(__aarch64__) && defined(__linux__)
  return (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#elif defined(__aarch64__) && defined(__APPLE__)
  int value = 0;
  size_t size = sizeof(value);
  return sysctlbyname("hw.optional.arm.FEAT_DotProd", &value, &size, nullptr, 0) == 0 && value != 0;
#else
  return false;
#endif
}
#endif

IntegerIsa best_integer_supported() {
#if defined(__x86_64__)
  switch (best_supported()) {
    case Isa::Avx512: return x86_features().avx512vnni ? IntegerIsa::Avx512Vnni : IntegerIsa::Avx512;
    case Isa::Avx2: return IntegerIsa::Avx2;
    case Isa::Portable: break;
  }
  return IntegerIsa::Portable;
#else
  return has_dotprod() ? IntegerIsa::Dotprod : IntegerIsa::Portable;
#endif
}

struct Level {
  const char* name;
  IntegerIsa isa;
};

// This architecture's levels, lowest first, and the names of the other architecture's.
#if defined(__x86_64__)
constexpr Level kLevels[] = {{"portable", IntegerIsa::Portable},
                             {"avx2", IntegerIsa::Avx2},
                             {"avx512", IntegerIsa::Avx512},
                             {"avx512vnni", IntegerIsa::Avx512Vnni}};
constexpr const char* kForeignNames[] = {"dotprod"};
#elif defined(__aarch64__)
constexpr Level kLevels[] = {{"portable", IntegerIsa::Portable}, {"dotprod", IntegerIsa::Dotprod}};
constexpr const char* kForeignNames[] = {"avx2", "avx512", "avx512vnni"};
#else
constexpr Level kLevels[] = {{"portable", IntegerIsa::Portable}};
constexpr const char* kForeignNames[] = {"avx2", "avx512", "avx512vnni", "dotprod"};
#endif

// The level a name asks for, at most `best`; portable for a level of the other
// architecture; `best` for no name or one not known.
IntegerIsa integer_requested(IntegerIsa best) {
  const char* name = requested_name();
  if (name == nullptr) return best;
  for (const Level& level : kLevels) {
    if (std::strcmp(name, level.name) == 0) {
      return static_cast<int>(level.isa) < static_cast<int>(best) ? level.isa : best;
    }
  }
  for (const char* foreign : kForeignNames) {
    if (std::strcmp(name, foreign) == 0) return IntegerIsa::Portable;
  }
  return best;
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

IntegerIsa integer_kernel_isa() {
  static const IntegerIsa chosen = integer_requested(best_integer_supported());
  return chosen;
}

const char* integer_isa_name(IntegerIsa isa) {
  switch (isa) {
    case IntegerIsa::Avx512Vnni: return "avx512vnni";
    case IntegerIsa::Avx512: return "avx512";
    case IntegerIsa::Avx2: return "avx2";
    case IntegerIsa::Dotprod: return "dotprod";
    case IntegerIsa::Portable: break;
  }
  return "portable";
}

}  // namespace edgert::kernels
