#include "kernels/nn/norm.h"

namespace kb::nn {

namespace {

// 1 / sqrt(sum / h + eps) per row, from the rows' sums [T, 1].
tl::Tensor inverse_rms(tl::Ctx& tl, const tl::Tensor& sums, std::uint32_t h, float eps) {
  const tl::Tensor mean = tl.mul(sums, 1.0f / static_cast<float>(h));
  return tl.rsqrt(tl.add(mean, tl.full({1, 1}, eps)));
}

}  // namespace

tl::Tensor rms_norm(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w, float eps) {
  const tl::Tensor r = inverse_rms(tl, tl.sum(tl.mul(x, x), 1), x.cols(), eps);
  return tl.mul(tl.mul(x, r), w);
}

tl::Tensor layer_norm(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w, const tl::Tensor& b, float eps) {
  const tl::Tensor centred = tl.sub(x, tl.mul(tl.sum(x, 1), 1.0f / static_cast<float>(x.cols())));
  const tl::Tensor r = inverse_rms(tl, tl.sum(tl.mul(centred, centred), 1), x.cols(), eps);
  return tl.fma(tl.mul(centred, r), w, b);
}

}  // namespace kb::nn
