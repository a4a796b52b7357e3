// The instruction sets the CPU kernels choose between at run time. The library itself is
// built for the baseline of its architecture (x86-64, aarch64); the AVX2 and AVX-512 code
// paths are compiled as separate functions (target attributes) and picked once per process
// from what the processor supports. Every path computes the same operations in the same
// order without fused multiply-add, so each gives the same bytes (docs/kernels.md).
#pragma once

namespace edgert::kernels {

enum class Isa { Portable, Avx2, Avx512 };

// The instruction set the kernels use in this process: the best the processor supports,
// lowered by the environment variable EDGERT_KERNELS_ISA ("portable", "avx2" or "avx512";
// asking for more than the processor has gives what it has). Decided on first use.
// "avx512vnni" gives avx512 here (the float kernels have no use for VNNI); "dotprod" gives
// portable.
Isa kernel_isa();

const char* isa_name(Isa isa);

// The levels of the integer (int8) kernels: the float levels plus the dot-product
// instructions of each architecture. Avx512Vnni: AVX-512 (as Isa::Avx512) with VNNI
// (vpdpbusd). Dotprod: aarch64's dot-product extension (sdot; HWCAP_ASIMDDP on Linux).
// Integer sums are exact, so every level gives the same bytes.
enum class IntegerIsa { Portable, Avx2, Avx512, Avx512Vnni, Dotprod };

// The integer kernels' level in this process: the best the processor supports, lowered by
// EDGERT_KERNELS_ISA ("portable", "avx2", "avx512", "avx512vnni" on x86-64; "portable",
// "dotprod" on aarch64; a name of the other architecture gives portable, asking for more
// than the processor has gives what it has). Decided on first use.
IntegerIsa integer_kernel_isa();

const char* integer_isa_name(IntegerIsa isa);

}  // namespace edgert::kernels
