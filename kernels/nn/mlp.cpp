#include "kernels/nn/mlp.h"

#include "kernels/nn/linear.h"
#include "kernels/nn/norm.h"
#include "kernels/nn/pointwise.h"

namespace kb::nn {

tl::Tensor mlp_hidden(tl::Ctx& tl, const tl::Tensor& n, const MlpShare& w) {
  return tl.empty({n.rows(), w.up_t.cols()}, w.down_t.dtype(), "hidden");
}

void mlp_features(tl::Ctx& tl, const tl::Tensor& n, const MlpShare& w, const tl::Tensor& hidden) {
  const auto scope = tl.scratch_scope();
  // The GEMMs take the weights' dtype in (bf16 in, fp32 out: the engine's). Each step
  // opens a phase, which a layer's breakdown by op reads.
  tl.phase("up_gate_proj");
  const tl::Tensor up = linear(tl, n, w.up_t, nullptr, 0, w.up_ahead);
  const tl::Tensor gate = w.gate_t.valid() ? linear(tl, n, w.gate_t, nullptr, 0, w.gate_ahead) : tl::Tensor();
  // The projections' time is theirs, not the activation's that would wait for them.
  tl.wait(up);
  if (gate.valid()) tl.wait(gate);
  tl.phase("activation");
  if (gate.valid())
    tl.copy(w.act == Activation::Silu ? swiglu(tl, gate, up) : geglu(tl, gate, up), hidden);
  else
    tl.copy(w.act == Activation::Silu ? silu(tl, up) : gelu(tl, up), hidden);
}

tl::Tensor mlp_down(tl::Ctx& tl, const tl::Tensor& hidden, const MlpShare& w) {
  tl.phase("down_proj");
  return linear(tl, hidden, w.down_t);
}

tl::Tensor mlp_partial(tl::Ctx& tl, const tl::Tensor& n, const MlpShare& w) {
  // The up and gate streams' staging is given back before the down projection streams.
  const tl::Tensor hidden = mlp_hidden(tl, n, w);
  mlp_features(tl, n, w, hidden);
  return mlp_down(tl, hidden, w);
}

tl::Tensor mlp_block(tl::Ctx& tl, const tl::Tensor& x, const MlpShare& w, const collectives::Plan& all_reduce) {
  const tl::Tensor sum = tl.empty({static_cast<std::int64_t>(x.elements() / all_reduce.cols), all_reduce.cols},
                                  DType::fp32, "partial_sum");
  {
    const auto scope = tl.scratch_scope();
    const tl::Tensor partial = mlp_partial(tl, tl.cast(rms_norm(tl, x, w.norm, w.eps), w.up_t.dtype()), w);
    tl.copy(tl.view(partial, sum.shape()), sum);
  }
  {
    const auto scope = tl.scratch_scope();
    collectives::run_in_tcm(tl, all_reduce, sum);
  }
  return residual(tl, x, tl.view(sum, x.shape()));
}

}  // namespace kb::nn
