#include "kernels/layer/prefill_layer.h"

#include <algorithm>
#include <array>

#include "kernels/collectives/collective.h"
#include "kernels/layer/prefill_lanes.h"
#include "kernels/nn/pointwise.h"

namespace kb::layer {

namespace {

using prefill::column_parallel;
using prefill::Here;
using prefill::row_blocks;
using prefill::Stream;
using prefill::u32;

// The layer's norm of the lane's rows of the residual stream `src` (x, or sums after the
// attention's all-reduce), chunk by chunk (a row is P chunks): a = norm(src), in a's dtype.
void norm_rows(tl::Ctx& tl, const PrefillPlan& s, const Here& h,
               const std::vector<DeviceTensor>& src, const DeviceTensor& norm) {
  const PrefillForm& f = s.form;
  const std::uint32_t sip = tl.sip().value, c = f.chunk_cols(), per_row = 4 * f.hidden;
  const DeviceTensor &x = src.at(sip), &a = s.a.at(sip);
  const auto scope = tl.scratch_scope();
  const tl::Tensor w = tl.load(norm, tl.shard_rows(norm));
  const std::uint32_t block =
      std::max<std::uint32_t>(1, std::min<std::uint64_t>(h.rows, tl.tcm_capacity() / 4 / per_row));
  for (std::uint64_t r0 = 0; r0 < h.rows; r0 += block) {
    const auto inner = tl.scratch_scope();
    const std::uint32_t n = u32(std::min<std::uint64_t>(block, h.rows - r0));
    std::vector<tl::Tensor> xs;
    for (std::uint32_t k = 0; k < f.chunks; ++k)
      xs.push_back(tl.load(x, chunk_rows(tl, f, x, k, r0, n)));
    // The row statistics over the chunks: RMSNorm's mean square; LayerNorm's mean, then
    // the variance about it.
    const float inv_h = 1.0f / static_cast<float>(f.hidden);
    if (f.layer_norm) {
      const tl::Tensor mean = tl.empty({n, 1}, DType::fp32, "mean");
      for (std::uint32_t k = 0; k < f.chunks; ++k) {
        const auto temporaries = tl.scratch_scope();
        const tl::Tensor part = tl.sum(xs[k], 1);
        if (k == 0)
          tl.copy(part, mean);
        else
          tl.add(mean, part, &mean);
      }
      tl.mul(mean, inv_h, &mean);
      for (const tl::Tensor& xk : xs) tl.sub(xk, mean, &xk);
    }
    const tl::Tensor ss = tl.empty({n, 1}, DType::fp32, "sum_squares");
    for (std::uint32_t k = 0; k < f.chunks; ++k) {
      const auto temporaries = tl.scratch_scope();
      const tl::Tensor sq = tl.sum(tl.mul(xs[k], xs[k]), 1);
      if (k == 0)
        tl.copy(sq, ss);
      else
        tl.add(ss, sq, &ss);
    }
    tl.mul(ss, inv_h, &ss);
    const tl::Tensor inv = tl.rsqrt(tl.add(ss, tl.full({1, 1}, f.eps)));
    for (std::uint32_t k = 0; k < f.chunks; ++k) {
      const auto temporaries = tl.scratch_scope();
      const tl::Tensor scale = tl.cols(tl.rows(w, 0, 1), k * c, c);
      tl.mul(xs[k], inv, &xs[k]);
      tl.mul(xs[k], scale, &xs[k]);
      if (f.layer_norm) {
        const tl::Tensor bias = tl.cols(tl.rows(w, 1, 1), k * c, c);
        tl.add(xs[k], bias, &xs[k]);
      }
      tl.store(a, chunk_rows(tl, f, a, k, r0, n), tl.cast(xs[k], a.dtype()));
    }
  }
}

// The MLP of the lane's rows, block by block, in two sweeps: the cube's features of gate
// and up, a pass of them at a time, activated into hidden (HBM); then chunk s of its share
// of the output from hidden and sibling s's shard of W_down^T, into x: added to the
// attention's partial sums for a parallel block, else to the residual (in sums after the
// attention's all-reduce) where this cube adds it.
void mlp(tl::Ctx& tl, const PrefillPlan& s, const PrefillWeights& w, const Here& h) {
  const PrefillForm& f = s.form;
  const std::uint32_t sip = tl.sip().value, most = f.block_rows, cols = f.mlp_cols / f.mlp_passes;
  const DeviceTensor &a = s.a.at(sip), &sums = s.sums.at(sip), &x = s.x.at(sip),
                     &hidden = s.hidden.at(sip);
  const RowRange held = tl.shard_rows(hidden);
  auto hidden_rows = [&](std::uint32_t j, RowRange b) {
    return RowRange{held.begin + std::uint64_t{j} * f.lane_rows + b.begin, b.count};
  };
  const std::vector<RowRange> lane = row_blocks(h.rows, f.block_rows, tl.topology().pe.gemm.rows);
  {
    const auto scope = tl.scratch_scope();
    const std::array<tl::Tensor, 2> in{tl.empty({most, f.chunk_cols()}, a.dtype(), "a_chunk"),
                                       tl.empty({most, f.chunk_cols()}, a.dtype(), "a_chunk")};
    const tl::Tensor projected =
        tl.empty({most, static_cast<std::int64_t>(w.gate_up.cols())}, DType::fp32, "gate_up");
    for (const RowRange b : lane)
      for (std::uint32_t j = 0; j < f.mlp_passes; ++j) {
        const auto inner = tl.scratch_scope();
        const auto n = u32(b.count);
        tl.phase("up_gate_proj");
        const tl::Tensor gu = tl.rows(projected, 0, n);
        column_parallel(tl, h, f, a, b, w.gate_up, gu, in, j);
        tl.wait(gu);
        tl.phase("activation");
        const tl::Tensor u = tl.cols(gu, f.gated ? cols : 0, cols);
        tl::Tensor act;
        if (f.gated) {
          const tl::Tensor g = tl.cols(gu, 0, cols);
          act = f.act == nn::Activation::Silu ? nn::swiglu(tl, g, u) : nn::geglu(tl, g, u);
        } else {
          act = f.act == nn::Activation::Silu ? nn::silu(tl, u) : nn::gelu(tl, u);
        }
        tl.store(hidden, hidden_rows(j, b), tl.cast(act, hidden.dtype()));
      }
  }
  tl.phase("down_proj");
  const auto scope = tl.scratch_scope();
  const tl::Tensor features =
      tl.empty({std::int64_t{f.mlp_passes} * most, cols}, hidden.dtype(), "hidden");
  const tl::Tensor out = tl.empty({most, f.chunk_cols()}, DType::fp32, "mlp_partial");
  const Stream down(tl, tl.ref(w.down, {h.shard_of(w.down, 0).begin, cols}));
  for (std::uint32_t bi = 0; bi < lane.size(); ++bi) {
    const RowRange b = lane[bi];
    const auto n = u32(b.count);
    std::vector<tl::Tensor> pass;
    for (std::uint32_t j = 0; j < f.mlp_passes; ++j) {
      pass.push_back(tl.rows(features, j * most, n));
      tl.load(hidden, hidden_rows(j, b), &pass.back());
    }
    const tl::Tensor part = tl.rows(out, 0, n);
    for (std::uint32_t i = 0; i < f.chunks; ++i) {
      const std::uint32_t c = h.sibling(i);
      const bool add = f.parallel || h.adds_residual(bi, c);
      if (add) tl.load(sums, chunk_rows(tl, f, sums, c, b.begin, n), &part);
      const RowRange shard = h.shard_of(w.down, c);
      for (std::uint32_t j = 0; j < f.mlp_passes; ++j)
        tl.composite(pass[j], tl.ref(w.down, {shard.begin + std::uint64_t{j} * cols, cols}),
                     down.opts(part, add || j > 0));
      tl.store(x, chunk_rows(tl, f, x, c, b.begin, n), part);
    }
  }
  tl.wait(out);
}

// The partial sums in `sums` (one tensor a SIP) added over the lane, in place.
void all_reduce(tl::Ctx& tl, const PrefillPlan& s, const std::vector<DeviceTensor>& sums) {
  const auto scope = tl.scratch_scope();
  collectives::run(tl, s.all_reduce, sums);
}

}  // namespace

RowRange chunk_rows(const tl::Ctx& tl, const PrefillForm& f, const DeviceTensor& t, std::uint32_t k,
                    std::uint64_t r0, std::uint64_t n) {
  return {tl.shard_rows(t).begin + std::uint64_t{k} * f.lane_rows + r0, n};
}

void prefill_layer(tl::Ctx& tl, const PrefillPlan& s, const PrefillWeights& w) {
  const Here h = Here::of(tl, s);
  const CubeAttention& cube = w.cubes.at(h.cube);
  // The residual stream goes x -> (attention) sums -> (MLP) x: each all-reduce sums the
  // partials with the residual one cube added, so x holds the layer's output.
  tl.phase("attn_norm");
  norm_rows(tl, s, h, s.x, w.attn_norm);
  prefill::attention_block(tl, s, w, h, cube);
  if (!s.form.parallel) {
    tl.phase("attn_all_reduce");
    all_reduce(tl, s, s.sums);
    tl.phase("mlp_norm");
    norm_rows(tl, s, h, s.sums, w.mlp_norm);
  }
  mlp(tl, s, w, h);
  tl.phase(s.form.parallel ? "attn_all_reduce" : "mlp_all_reduce");
  all_reduce(tl, s, s.x);
}

}  // namespace kb::layer
