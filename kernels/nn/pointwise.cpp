#include "kernels/nn/pointwise.h"

#include <cmath>

namespace kb::nn {

namespace {

// x * sigmoid(k x') = x / (1 + exp(-k x')), for x' = x or a function of it.
tl::Tensor times_sigmoid(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& arg, float k) {
  const tl::Tensor e = tl.exp(tl.mul(arg, -k));
  return tl.div(x, tl.add(e, tl.full({1, 1}, 1.0f)));
}

}  // namespace

tl::Tensor residual(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& y) { return tl.add(x, y); }

tl::Tensor silu(tl::Ctx& tl, const tl::Tensor& x) { return times_sigmoid(tl, x, x, 1.0f); }

tl::Tensor gelu(tl::Ctx& tl, const tl::Tensor& x) {
  // x + 0.044715 x^3 = x * (0.044715 x^2 + 1); one statement an op, so that every
  // compiler issues them in this order.
  const tl::Tensor square = tl.mul(x, x);
  const tl::Tensor k = tl.full({1, 1}, 0.044715f);
  const tl::Tensor one = tl.full({1, 1}, 1.0f);
  const tl::Tensor inner = tl.mul(x, tl.fma(square, k, one));
  return times_sigmoid(tl, x, inner, static_cast<float>(2 * std::sqrt(2 / M_PI)));
}

tl::Tensor swiglu(tl::Ctx& tl, const tl::Tensor& gate, const tl::Tensor& up) { return tl.mul(silu(tl, gate), up); }
tl::Tensor geglu(tl::Ctx& tl, const tl::Tensor& gate, const tl::Tensor& up) { return tl.mul(gelu(tl, gate), up); }

}  // namespace kb::nn
