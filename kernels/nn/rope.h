#pragma once
// Rotary position embedding (RoPE) in the rotate-half form of the Hugging Face Llama
// code: for each head's d features split into halves x1, x2 and each frequency i < d/2,
//   out1 = x1 cos - x2 sin,  out2 = x2 cos + x1 sin,   angle = position * inv_freq[i].
// The cos and sin tables of the rows' positions are computed on the host (as a serving
// stack precomputes them) and sit in HBM: the kernel loads them and does 4 MATH ops a head.
#include <cstdint>
#include <vector>

#include "base/npy.h"
#include "kernels/tl/ctx.h"

namespace kb::nn {

// Llama 3.1's frequency scaling (rope_type "llama3"); factor 0: none.
struct RopeScaling {
  double factor = 0, low_freq_factor = 1, high_freq_factor = 4;
  double original_max_position = 8192;
  bool on() const { return factor > 0; }
};

// inv_freq[i] = theta^(-2i/d), scaled as Llama 3.1 does: wavelengths longer than
// original / low_freq_factor are divided by factor, shorter than original /
// high_freq_factor kept, and those between blended smoothly.
std::vector<double> rope_inv_freq(std::uint32_t d, double theta, const RopeScaling& scaling = {});
// The tables for `positions`: cos and sin [positions, d/2], fp32 on the host.
struct RopeTables {
  HostTensor cos, sin;
};
RopeTables rope_tables(const std::vector<std::int64_t>& positions, std::uint32_t d, double theta,
                       const RopeScaling& scaling = {});

// x [T, heads * d] rotated by the tables' rows (cos and sin [T, d/2], row t for x's row t).
tl::Tensor rope(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& cos, const tl::Tensor& sin, std::uint32_t heads,
                std::uint32_t d);

}  // namespace kb::nn
