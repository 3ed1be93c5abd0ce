#pragma once
// A decoder layer's pointwise ops on TCM tensors: the residual add and the MLP's
// activations. The MATH engine has exp and div, so a sigmoid is 1 / (1 + exp(-x)), and
// GELU's tanh form is x * sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) (tanh(z) = 2 sigmoid(2z) - 1).
#include "kernels/tl/ctx.h"

namespace kb::nn {

tl::Tensor residual(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& y);  // x + y
tl::Tensor silu(tl::Ctx& tl, const tl::Tensor& x);                           // x * sigmoid(x)
tl::Tensor gelu(tl::Ctx& tl, const tl::Tensor& x);                           // the tanh form
// The gated MLPs' middle: silu(gate) * up (SwiGLU) and gelu(gate) * up (GeGLU).
tl::Tensor swiglu(tl::Ctx& tl, const tl::Tensor& gate, const tl::Tensor& up);
tl::Tensor geglu(tl::Ctx& tl, const tl::Tensor& gate, const tl::Tensor& up);

}  // namespace kb::nn
