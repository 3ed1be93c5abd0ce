#include "kernels/gqa/fused.h"

#include <algorithm>

#include "kernels/tl/sequence.h"

namespace kb::gqa {

void flash_tile(tl::Ctx& tl, const FlashTile& f) {
  tl::Sequence seq(tl, "flash_tile");
  const tl::Tensor* required[] = {f.q, f.k, f.v, f.m, f.l, f.o, f.s, f.p, f.pv, f.m_new, f.alpha, f.rowsum};
  if (std::find(std::begin(required), std::end(required), nullptr) != std::end(required))
    tl.fail("flash_tile", "every tensor of the FlashTile must be given");
  const bool streamed = f.k->is_ref();
  if (f.v->is_ref() != streamed) tl.fail("flash_tile", "k and v must both be HBM refs or both be in TCM");
  if (streamed && (f.stage_k == nullptr || f.stage_v == nullptr))
    tl.fail("flash_tile", "streamed k and v need stage buffers");
  const std::uint32_t m = f.q->rows(), n = f.k->rows();
  if (f.s->elements() < static_cast<std::uint64_t>(m) * n || f.p->elements() < static_cast<std::uint64_t>(m) * n)
    tl.fail("flash_tile", "the work buffers S and P hold fewer than " + std::to_string(m) + " x " + std::to_string(n) +
                              " elements");
  // The work buffers may be larger than this tile: its [m, n] blocks and first m rows.
  auto block = [&](const tl::Tensor& flat) { return seq.view(seq.rows(flat, 0, m * n), {m, n}); };
  auto first = [&](const tl::Tensor& t) { return seq.rows(t, 0, m); };
  const tl::Tensor S = block(*f.s), P = block(*f.p), PV = first(*f.pv);
  const tl::Tensor MN = first(*f.m_new), A = first(*f.alpha), RS = first(*f.rowsum);
  for (const tl::Tensor* st : {f.m, f.l, f.o}) seq.state(*st);
  seq.describe(*f.k);
  tl::CompositeOpts qk;
  qk.trans_b = true;
  qk.tile_rows = f.stream_rows;
  qk.stage = f.stage_k;
  seq.gemm(*f.q, *f.k, S, qk);
  seq.mul(S, f.scale, S);
  if (f.causal) seq.causal_mask(S, f.q_pos0, f.q_period, f.k_pos0);
  seq.max(S, MN);
  seq.maximum(*f.m, MN, MN);  // the first touch of the state: after earlier tiles
  seq.exp_diff(S, MN, S);
  seq.exp_diff(*f.m, MN, A);
  seq.sum(S, RS);
  seq.mul(*f.l, A, *f.l);
  seq.add(*f.l, RS, *f.l);
  seq.copy(MN, *f.m);
  seq.copy(S, P);
  seq.mul(*f.o, A, *f.o);
  tl::CompositeOpts pv;
  pv.tile_rows = f.stream_rows;
  pv.stage = f.stage_v;
  seq.gemm(P, *f.v, PV, pv);
  seq.add(*f.o, PV, *f.o);
  seq.issue();
}

tl::Tensor merge_state(tl::Ctx& tl, const tl::Tensor& state, const tl::Tensor& other) {
  tl::Sequence seq(tl, "merge_state", tl::Sequence::Issue::Hold);
  if (state.shape() != other.shape() || state.cols() < 3 || state.dtype() != DType::fp32 ||
      other.dtype() != DType::fp32 || !state.contiguous() || !other.contiguous())
    tl.fail("merge_state", "state " + shape_text(state.shape()) + " " + dtype_name(state.dtype()) + " and other " +
                               shape_text(other.shape()) + " " + dtype_name(other.dtype()) +
                               ": both must be the same contiguous fp32 [rows, d + 2] (O | l | m)");
  const std::uint32_t rows = state.rows(), d = state.cols() - 2;
  const tl::Tensor m_new = seq.scratch({rows, 1}, DType::fp32, "m_new");
  const tl::Tensor alpha = seq.scratch({rows, 1}, DType::fp32, "alpha");
  const tl::Tensor beta = seq.scratch({rows, 1}, DType::fp32, "beta");
  const tl::Tensor ma = seq.cols(state, d + 1, 1), mb = seq.cols(other, d + 1, 1);
  const tl::Tensor ola = seq.cols(state, 0, d + 1), olb = seq.cols(other, 0, d + 1);
  seq.describe(state);
  seq.maximum(ma, mb, m_new);
  seq.exp_diff(ma, m_new, alpha);
  seq.exp_diff(mb, m_new, beta);
  seq.mul(ola, alpha, ola);  // O and l in one pass each
  seq.mul(olb, beta, olb);
  seq.add(ola, olb, ola);
  seq.copy(m_new, ma);
  seq.issue();
  return state;
}

}  // namespace kb::gqa
