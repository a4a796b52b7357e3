// The layout of the direct depthwise kernels (the float one in convolution.cpp, the int8 one
// in ../kernels_quantized/convolution.cpp): one input channel copied into a zero-padded plane
// split into stride phases along both dimensions, phase (qh, qw) holding padded[qh + sh·i]
// [qw + sw·j] at i·L + j with pitch L = ceil(Wp / sw), so tap (kh, kw) of output p = oh·L + ow
// is one contiguous run at offsets[t] whatever the stride and dilation. Each kernel keeps its
// own sums and its own even/odd split of a row (they are vector code of their own library).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sliding_window.hpp"

namespace edgert::kernels {

struct DepthwisePhases {
  const ConvolutionGeometry& g;
  int64_t pitch;                 // L = ceil(Wp / sw)
  int64_t phase_size;            // ceil(Hp / sh) · L
  int64_t column_phases;         // min(sw, Wp)
  int64_t positions;             // (OH - 1) · L + OW: the last output's p, plus one
  std::vector<float> plane;      // the phases, then zeros up to the furthest read
  std::vector<int64_t> offsets;  // of each tap (kh, kw) in plane
  std::vector<float> sums;       // [OH, L] (and the rounding up to a vector)
  int64_t channel = -1;          // the (image · C + c) copied into plane

  explicit DepthwisePhases(const ConvolutionGeometry& geometry) : g(geometry) {
    const int64_t padded_height = g.height + 2 * g.padding.height, padded_width = g.width + 2 * g.padding.width;
    pitch = (padded_width + g.stride.width - 1) / g.stride.width;
    phase_size = (padded_height + g.stride.height - 1) / g.stride.height * pitch;
    column_phases = std::min(g.stride.width, padded_width);
    const int64_t row_phases = std::min(g.stride.height, padded_height);
    positions = (g.out_height - 1) * pitch + g.out_width;
    const int64_t rounded = (positions + 15) / 16 * 16;  // the vectors' last reads and writes
    int64_t furthest = 0;
    for (int64_t kh = 0; kh < g.kernel_height; ++kh) {
      for (int64_t kw = 0; kw < g.kernel_width; ++kw) {
        const int64_t row = kh * g.dilation.height, column = kw * g.dilation.width;
        const int64_t phase = row % g.stride.height * column_phases + column % g.stride.width;
        offsets.push_back(phase * phase_size + row / g.stride.height * pitch + column / g.stride.width);
        furthest = std::max(furthest, offsets.back() + rounded);
      }
    }
    plane.assign(static_cast<size_t>(std::max(row_phases * column_phases * phase_size, furthest)), 0.0f);
    sums.assign(static_cast<size_t>(std::max(g.out_height * pitch, rounded)), 0.0f);
  }

  // Copies the plane `source` [H, W] into the phases (their padding stays zero);
  // `deinterleave(row, count, even, odd)` splits a row at stride 2.
  template <class Deinterleave>
  void split(const float* source, Deinterleave deinterleave) {
    const int64_t sh = g.stride.height, sw = g.stride.width;
    const int64_t first = g.padding.width;  // padded column of input 0
    for (int64_t h = 0; h < g.height; ++h) {
      const int64_t row = h + g.padding.height;
      float* phases = plane.data() + row % sh * column_phases * phase_size + row / sh * pitch;
      const float* input = source + h * g.width;
      if (sw == 1) {
        std::memcpy(phases + first, input, static_cast<size_t>(g.width) * sizeof(float));
      } else if (sw == 2) {  // input 2m to column first + 2m, input 2m + 1 to first + 2m + 1
        deinterleave(input, g.width, phases + first % 2 * phase_size + first / 2,
                     phases + (first + 1) % 2 * phase_size + (first + 1) / 2);
      } else {
        for (int64_t w = 0; w < g.width; ++w) {
          const int64_t column = w + first;
          phases[column % sw * phase_size + column / sw] = input[w];
        }
      }
    }
  }

  // The output plane [OH, OW] from sums [OH, L].
  void copy_out(float* out) const {
    for (int64_t oh = 0; oh < g.out_height; ++oh) {
      std::memcpy(out + oh * g.out_width, sums.data() + oh * pitch, static_cast<size_t>(g.out_width) * sizeof(float));
    }
  }
};

}  // namespace edgert::kernels
