#include "kernels/nn/rope.h"

#include <cmath>

namespace kb::nn {

std::vector<double> rope_inv_freq(std::uint32_t d, double theta, const RopeScaling& scaling) {
  std::vector<double> inv(d / 2);
  for (std::uint32_t i = 0; i < d / 2; ++i) inv[i] = std::pow(theta, -2.0 * i / d);
  if (!scaling.on()) return inv;
  const double low_wavelen = scaling.original_max_position / scaling.low_freq_factor;
  const double high_wavelen = scaling.original_max_position / scaling.high_freq_factor;
  for (double& f : inv) {
    const double wavelen = 2 * M_PI / f;
    if (wavelen < high_wavelen) continue;
    if (wavelen > low_wavelen) {
      f /= scaling.factor;
      continue;
    }
    const double smooth = (scaling.original_max_position / wavelen - scaling.low_freq_factor) /
                          (scaling.high_freq_factor - scaling.low_freq_factor);
    f = (1 - smooth) * f / scaling.factor + smooth * f;
  }
  return inv;
}

RopeTables rope_tables(const std::vector<std::int64_t>& positions, std::uint32_t d, double theta,
                       const RopeScaling& scaling) {
  const std::vector<double> inv = rope_inv_freq(d, theta, scaling);
  RopeTables t;
  const Shape shape{static_cast<std::int64_t>(positions.size()), d / 2};
  t.cos.shape = t.sin.shape = shape;
  for (const std::int64_t p : positions)
    for (const double f : inv) {
      t.cos.data.push_back(static_cast<float>(std::cos(static_cast<double>(p) * f)));
      t.sin.data.push_back(static_cast<float>(std::sin(static_cast<double>(p) * f)));
    }
  return t;
}

tl::Tensor rope(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& cos, const tl::Tensor& sin, std::uint32_t heads,
                std::uint32_t d) {
  if (d % 2 != 0 || x.cols() != heads * d) tl.fail("rope", "x must be [T, heads * d] with d even");
  const tl::Tensor out = tl.empty(x.shape(), DType::fp32, "rope");
  const tl::Tensor minus_sin = tl.mul(sin, -1.0f);
  for (std::uint32_t h = 0; h < heads; ++h) {
    const tl::Tensor x1 = tl.cols(x, h * d, d / 2), x2 = tl.cols(x, h * d + d / 2, d / 2);
    const tl::Tensor o1 = tl.cols(out, h * d, d / 2), o2 = tl.cols(out, h * d + d / 2, d / 2);
    tl.fma(x2, minus_sin, tl.mul(x1, cos), &o1);
    tl.fma(x1, sin, tl.mul(x2, cos), &o2);
  }
  return out;
}

}  // namespace kb::nn
