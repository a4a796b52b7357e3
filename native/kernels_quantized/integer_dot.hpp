// Exact integer dot products for the quantized conv2d's direct path (groups of few output
// channels; the rest runs on the int8 GEMM, int8_gemm.hpp): int16 operands, int32 sums.
#pragma once

#include <cstdint>

namespace edgert_quantized {

// Operand rows are padded with zeros to a multiple of this many elements.
constexpr int64_t kDotBlock = 16;

// out[n] = Σ_k x[k]·w[n * length + k] for n < rows, exactly: the caller guarantees that no
// partial sum leaves int32 (|x|, |w| <= 255 and length <= 33025). Integer sums do not
// depend on their order, so every instruction set gives the same result. length is a
// multiple of kDotBlock.
void dot_rows(const int16_t* x, const int16_t* w, int64_t length, int64_t rows, int32_t* out);

}  // namespace edgert_quantized
