#pragma once
// A decoder layer's norms, over each row (one token's features) of x [T, h] in TCM:
// RMSNorm (Llama, Qwen, Mistral, Gemma, Phi) and LayerNorm (Falcon). Written with the
// MATH engine's ops; the statistics are fp32, as the models' reference code computes them.
#include "kernels/tl/ctx.h"

namespace kb::nn {

// x / sqrt(mean(x^2) + eps) * w; w is [1, h].
tl::Tensor rms_norm(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w, float eps);
// (x - mean(x)) / sqrt(var(x) + eps) * w + b; w and b are [1, h].
tl::Tensor layer_norm(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w, const tl::Tensor& b, float eps);

}  // namespace kb::nn
