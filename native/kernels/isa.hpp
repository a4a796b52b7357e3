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
Isa kernel_isa();

const char* isa_name(Isa isa);

}  // namespace edgert::kernels
