#pragma once
// A decoder layer's MLP block on one PE's share of the intermediate features
// (docs/models.md, Tensor-parallel placement): the PE normalises its copy of x, computes
// its features of the gate and up projections, activates them, and multiplies them by
// its columns of W_down, a partial sum of the whole output; an all-reduce over every PE
// of the block (inside the SIPs and over their links) adds the partials, and every PE
// ends with x + MLP(norm(x)), the next block's input, whole.
#include "kernels/collectives/collective.h"
#include "kernels/nn/linear.h"
#include "kernels/tl/ctx.h"

namespace kb::nn {

enum class Activation { Silu, Gelu };

// This PE's weights.
struct MlpShare {
  tl::Tensor norm;      // [1, h] RMSNorm weight, in TCM
  tl::Tensor up_t;      // ref: [h, i], its i outputs of W_up, as W_up^T's columns (nn::linear)
  tl::Tensor gate_t;    // ref: [h, i], the same of W_gate (none for an ungated MLP: act(up))
  tl::Tensor down_t;    // ref: [i, h], its i columns of W_down, transposed: W_down^T's rows
  Activation act = Activation::Silu;
  float eps = 1e-5f;
  // up_t's and gate_t's first tiles, loaded ahead (nn::preload), or none.
  const Preloaded* up_ahead = nullptr;
  const Preloaded* gate_ahead = nullptr;
};

// This PE's partial sum of the MLP: n [B, h], normalised and in the weights' dtype, through
// its features of the up (and gate) projection, the activation and its columns of W_down.
// Returns [B, h], fp32; the sum over every PE's is the MLP's output.
tl::Tensor mlp_partial(tl::Ctx& tl, const tl::Tensor& n, const MlpShare& w);
// Its steps, for a caller that frees what the first needs before the second:
// the activated features' buffer [B, i] in W_down's dtype;
tl::Tensor mlp_hidden(tl::Ctx& tl, const tl::Tensor& n, const MlpShare& w);
// the up (and gate) projections and the activation into it, their temporaries freed;
void mlp_features(tl::Ctx& tl, const tl::Tensor& n, const MlpShare& w, const tl::Tensor& hidden);
// its share of the output: hidden [B, i] x (W_down's columns)^T [i, h], [B, h] fp32.
tl::Tensor mlp_down(tl::Ctx& tl, const tl::Tensor& hidden, const MlpShare& w);

// x [B, h] in TCM on every PE of the plan's ranks (one PE a rank). The partial sums are
// all-reduced in the TCM, as rows of the plan's `cols` (narrow rows let the all-reduce
// pipeline its pieces). The GEMMs take their inputs in the weights' dtype (the normalised
// x and the activated features are converted); everything else is fp32. Returns [B, h].
tl::Tensor mlp_block(tl::Ctx& tl, const tl::Tensor& x, const MlpShare& w, const collectives::Plan& all_reduce);

}  // namespace kb::nn
