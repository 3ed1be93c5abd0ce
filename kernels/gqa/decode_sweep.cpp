#include "kernels/gqa/decode_sweep.h"

#include <algorithm>

namespace kb::gqa {

std::vector<RowRange> tiles_of(RowRange rows, std::uint32_t tile_rows) {
  std::vector<RowRange> out;
  for (std::uint64_t row = rows.begin; row < rows.end(); row += tile_rows)
    out.push_back({row, std::min<std::uint64_t>(tile_rows, rows.end() - row)});
  return out;
}

namespace {

// A [rows, cols] view of the first rows*cols elements of a flat [N, 1] buffer.
tl::Tensor block(tl::Ctx& tl, const tl::Tensor& flat, std::uint32_t rows, std::uint32_t cols) {
  const tl::Tensor head = tl.rows(flat, 0, rows * cols);
  return tl.view(head, {rows, cols});
}

// Scores of one tile, scaled and (for the tiles that reach past the first query
// position) causally masked.
tl::Tensor scaled_scores(tl::Ctx& tl, const SweepRank& r, const tl::Tensor& raw, const RowRange& tile) {
  tl::Tensor s = tl.mul(raw, r.p.scale);
  if (r.p.causal && static_cast<std::int64_t>(tile.end()) - 1 + r.k_pos > r.q_pos0) {
    const tl::Tensor bias = tl.causal_bias(r.m_rows, static_cast<std::uint32_t>(tile.count), r.q_pos0, r.q_period,
                                           static_cast<std::int64_t>(tile.begin) + r.k_pos);
    s = tl.add(s, bias);
  }
  return s;
}

// The softmax half of a tile: updates m and l, returns P (fp32) and writes alpha.
tl::Tensor softmax_update(tl::Ctx& tl, const SoftmaxState& st, const tl::Tensor& s, const tl::Tensor& alpha) {
  const tl::Tensor m_tile = tl.max(s, 1);
  const tl::Tensor m_new = tl.maximum(st.m, m_tile);
  const tl::Tensor p = tl.exp_diff(s, m_new);
  tl.exp_diff(st.m, m_new, &alpha);
  const tl::Tensor p_sum = tl.sum(p, 1);
  tl.fma(st.l, alpha, p_sum, &st.l);
  tl.copy(m_new, st.m);
  return p;
}

// The first `rows` rows of a buffer sized for the largest block (itself when they are all).
tl::Tensor fit(tl::Ctx& tl, const tl::Tensor& t, std::uint32_t rows) {
  return t.rows() == rows ? t : tl.rows(t, 0, rows);
}

}  // namespace

void sweep_naive(tl::Ctx& tl, const SweepRank& r, const SoftmaxState& st, const tl::Tensor& alpha_buffer) {
  st.reset(tl);
  const tl::Tensor alpha = fit(tl, alpha_buffer, r.m_rows);
  for (const RowRange& tile : r.tiles) {
    const auto scope = tl.scratch_scope();
    tl::CompositeOpts qk;
    qk.trans_b = true;
    qk.tile_rows = r.p.stream_rows;
    const tl::Tensor k = tl.ref(*r.k, tile);
    const tl::Tensor raw = tl.composite(r.q, k, qk);
    const tl::Tensor s = scaled_scores(tl, r, raw, tile);
    const tl::Tensor p = softmax_update(tl, st, s, alpha);
    tl::CompositeOpts pv;
    pv.tile_rows = r.p.stream_rows;
    const tl::Tensor p_cast = tl.cast(p, r.p.dtype);
    const tl::Tensor v = tl.ref(*r.v, tile);
    const tl::Tensor o_tile = tl.composite(p_cast, v, pv);
    tl.fma(st.o, alpha, o_tile, &st.o);
  }
}

namespace {
void qk_buffers(tl::Ctx& tl, const DecodeParams& p, PingPong& b, int i) {
  if (b.s[i].valid()) return;
  b.s[i] = tl.persistent({p.row_block * p.tile_rows, 1}, DType::fp32, "S");
  if (p.split_rows == 0) b.stage_k[i] = tl.persistent({kStageBuffers * p.stream_rows, p.d}, p.dtype, "stage_k");
}

void softmax_buffers(tl::Ctx& tl, const DecodeParams& p, PingPong& b, int i) {
  if (b.p[i].valid()) return;
  const std::uint32_t m = p.row_block, d = p.d;
  b.p[i] = tl.persistent({m * p.tile_rows, 1}, p.dtype, "P");
  b.pv[i] = tl.persistent({m, d}, DType::fp32, "PV");
  b.alpha[i] = tl.persistent({m, 1}, DType::fp32, "alpha");
  if (!p.prefetch_v) b.stage_v[i] = tl.persistent({kStageBuffers * p.stream_rows, d}, p.dtype, "stage_v");
}

// The rank's rows of tile j in the K or V kept in TCM, loaded the first time.
tl::Tensor resident_tile(tl::Ctx& tl, const SweepRank& r, const DeviceTensor& src, tl::Tensor& all, std::size_t& loaded,
                         std::size_t j, const char* name) {
  const RowRange& tile = r.tiles[j];
  if (!all.valid())
    all = tl.persistent({static_cast<std::int64_t>(r.tiles.back().end() - r.tiles.front().begin), r.p.d}, r.p.dtype, name);
  const tl::Tensor rows =
      tl.rows(all, static_cast<std::uint32_t>(tile.begin - r.tiles.front().begin), static_cast<std::uint32_t>(tile.count));
  if (j == loaded) {
    tl.load(src, tile, &rows);
    ++loaded;
  }
  return rows;
}
}  // namespace

void issue_qk(tl::Ctx& tl, const SweepRank& r, PingPong& b, std::size_t j) {
  const DecodeParams& prm = r.p;
  qk_buffers(tl, prm, b, j % 2);
  const tl::Tensor out = block(tl, b.s[j % 2], r.m_rows, static_cast<std::uint32_t>(r.tiles[j].count));
  tl::CompositeOpts qk;
  qk.trans_b = true;
  qk.tile_rows = prm.stream_rows;
  qk.out = &out;
  if (prm.split_rows > 0) {
    tl.composite(r.q, resident_tile(tl, r, *r.k, b.k_all, b.k_tiles, j, "K"), qk);
    return;
  }
  qk.stage = &b.stage_k[j % 2];
  const tl::Tensor k = tl.ref(*r.k, r.tiles[j]);
  tl.composite(r.q, k, qk);
}

void sweep_pipelined(tl::Ctx& tl, const SweepRank& r, const std::function<SoftmaxState()>& state, PingPong& b,
                     const std::function<void()>& next, const std::function<void()>& between) {
  const DecodeParams& prm = r.p;
  const auto n_tiles = r.tiles.size();
  auto cols = [&](std::size_t j) { return static_cast<std::uint32_t>(r.tiles[j].count); };
  // GEMM-bound shapes load each V tile into TCM as its Q.K^T is issued, so its P.V need
  // not wait for the HBM once P is ready; HBM-bound ones stream V (the DMA is busy anyway
  // and the last tile's P.V then waits only for its last streamed rows).
  auto load_v = [&](std::size_t j) {
    if (prm.split_rows > 0) {  // kept in TCM: loaded after the next tile's K (see the loop)
      resident_tile(tl, r, *r.v, b.v_all, b.v_tiles, j, "V");
      return;
    }
    if (!prm.prefetch_v) return;
    if (!b.v[j % 3].valid()) b.v[j % 3] = tl.persistent({prm.tile_rows, prm.d}, prm.dtype, "V");
    const tl::Tensor into = tl.rows(b.v[j % 3], 0, cols(j));
    tl.load(*r.v, r.tiles[j], &into);
  };
  if (r.qk_issued == 0) issue_qk(tl, r, b, 0);
  if (prm.split_rows == 0) load_v(0);
  const SoftmaxState st = state();
  st.reset(tl);
  std::array<tl::Tensor, 2> pv, alpha;  // this block's rows of them
  auto update_o = [&](std::size_t j) { tl.fma(st.o, alpha[j % 2], pv[j % 2], &st.o); };
  for (std::size_t j = 0; j < n_tiles; ++j) {
    if (j > 0 && between) between();  // outside the tile's scratch scope
    if (j + 1 < n_tiles) {  // streams while this tile's softmax runs
      if (j + 1 >= r.qk_issued) issue_qk(tl, r, b, j + 1);
      if (prm.split_rows == 0) load_v(j + 1);
    }
    if (prm.split_rows > 0) load_v(j);  // K's next tile goes first on the channel
    softmax_buffers(tl, prm, b, j % 2);
    if (!pv[j % 2].valid()) {
      pv[j % 2] = fit(tl, b.pv[j % 2], r.m_rows);
      alpha[j % 2] = fit(tl, b.alpha[j % 2], r.m_rows);
    }
    const auto scope = tl.scratch_scope();
    const tl::Tensor raw = block(tl, b.s[j % 2], r.m_rows, cols(j));
    const tl::Tensor s = scaled_scores(tl, r, raw, r.tiles[j]);
    const tl::Tensor p_out = block(tl, b.p[j % 2], r.m_rows, cols(j));
    const tl::Tensor p = softmax_update(tl, st, s, alpha[j % 2]);
    tl.copy(p, p_out);
    tl::CompositeOpts pv_opts;
    pv_opts.tile_rows = prm.stream_rows;
    pv_opts.out = &pv[j % 2];
    if (!prm.prefetch_v) pv_opts.stage = &b.stage_v[j % 2];  // a loaded V needs no staging
    const tl::Tensor v = prm.split_rows > 0
                             ? resident_tile(tl, r, *r.v, b.v_all, b.v_tiles, j, "V")
                             : (prm.prefetch_v ? tl.rows(b.v[j % 3], 0, cols(j)) : tl.ref(*r.v, r.tiles[j]));
    tl.composite(p_out, v, pv_opts);
    if (j > 0) update_o(j - 1);  // the previous tile's P.V is done by now
  }
  next();
  if (between) between();
  update_o(n_tiles - 1);
}

FusedSets fused_sets(tl::Ctx& tl, const DecodeParams& p) {
  FusedSets sets;
  for (FlashWork& b : sets) b = FlashWork::make(tl, p.row_block, p.tile_rows, p.d, p.dtype, kStageBuffers * p.stream_rows);
  return sets;
}

void sweep_fused(tl::Ctx& tl, const SweepRank& r, const SoftmaxState& st, const FusedSets& sets) {
  st.reset(tl);
  for (std::size_t j = 0; j < r.tiles.size(); ++j) {
    const RowRange& tile = r.tiles[j];
    const FlashWork& b = sets[j % sets.size()];
    const tl::Tensor k = tl.ref(*r.k, tile);
    const tl::Tensor v = tl.ref(*r.v, tile);
    FlashTile f = flash_args(r.q, k, v, st, b, r.p.scale);
    f.causal = r.p.causal && static_cast<std::int64_t>(tile.end()) - 1 + r.k_pos > r.q_pos0;
    f.q_pos0 = r.q_pos0;
    f.q_period = r.q_period;
    f.k_pos0 = static_cast<std::int64_t>(tile.begin) + r.k_pos;
    f.stream_rows = r.p.stream_rows;
    flash_tile(tl, f);
  }
}

}  // namespace kb::gqa
