#include <algorithm>
#include <cmath>

#include "kernels/collectives/collective.h"
#include "kernels/gqa/prefill_tiles.h"
#include "kernels/layer/prefill_lanes.h"
#include "kernels/nn/rope.h"

namespace kb::layer::prefill {

namespace {

// Q, K and V of the lane's rows: Q rotated into q (a run's rows head-major); K and V of the
// cube's part of the runs, K rotated, into the cache and the group's gathered buffer (at
// each run's kv_row).
void project_qkv(tl::Ctx& tl, const PrefillPlan& s, const PrefillWeights& w, const Here& h,
                 const CubeAttention& cube) {
  const PrefillForm& f = s.form;
  const std::uint32_t sip = tl.sip().value, d = f.head_dim;
  const DeviceTensor &a = s.a.at(sip), &q = s.q.at(sip);
  const std::vector<TokenRun>& runs = s.lanes.at(h.lane);
  const RowRange rope_mine = tl.shard_rows(s.rope_cos.at(sip));
  const RowRange q_mine = tl.shard_rows(q);
  const auto scope = tl.scratch_scope();
  const std::uint32_t most = f.block_rows;
  const std::array<tl::Tensor, 2> in{tl.empty({most, f.chunk_cols()}, a.dtype(), "a_chunk"),
                                     tl.empty({most, f.chunk_cols()}, a.dtype(), "a_chunk")};
  tl::Tensor q_bias, kv_bias;
  if (f.qkv_bias) {
    q_bias = tl.load(w.q_bias, tl.shard_rows(w.q_bias));
    kv_bias = tl.load(w.kv_bias, tl.shard_rows(w.kv_bias));
  }
  auto rope_rows = [&](const std::vector<DeviceTensor>& t, RowRange rows) {
    return tl.load(t.at(sip), {rope_mine.begin + rows.begin, rows.count});
  };
  if (cube.heads > 0) {
    // Q of the cube's heads, padded to the most any cube has (the shards' columns).
    const tl::Tensor out = tl.empty({most, f.heads * d}, DType::fp32, "q");
    for (const RowRange b : row_blocks(h.rows, f.block_rows, tl.topology().pe.gemm.rows)) {
      const auto inner = tl.scratch_scope();
      const tl::Tensor qb = tl.rows(out, 0, u32(b.count));
      column_parallel(tl, h, f, a, b, w.wq, qb, in);
      if (f.qkv_bias) tl.add(qb, q_bias, &qb);
      const tl::Tensor cos = rope_rows(s.rope_cos, b), sin = rope_rows(s.rope_sin, b);
      const tl::Tensor rotated = tl.cast(nn::rope(tl, qb, cos, sin, f.heads, d), q.dtype());
      // Each run's rows the block holds, head by head.
      for (const TokenRun& r : runs) {
        const std::uint64_t first = std::max(r.row, b.begin),
                            end = std::min(r.row + r.count, b.end());
        if (first >= end) continue;
        for (std::uint32_t j = 0; j < cube.heads; ++j) {
          const tl::Tensor head =
              tl.rows(tl.cols(rotated, j * d, d), u32(first - b.begin), u32(end - first));
          const tl::Tensor rows =
              f.heads == 1 ? head : tl.copy(head, tl.empty(head.shape(), q.dtype()));
          tl.store(
              q,
              {q_mine.begin + std::uint64_t{cube.heads} * r.row + j * r.count + (first - r.row),
               end - first},
              rows);
        }
      }
    }
  }
  // K and V, run by run: appended to the cache, and [K | V] rows of the gathered buffer
  // (fp32, a collective's) for the attention.
  const DeviceTensor& kv_gather = s.kv_gather.at(sip);
  const tl::Tensor out = tl.empty({most, 2 * d}, DType::fp32, "kv");
  const tl::Tensor k_new = tl.empty({most, d}, cube.k.dtype(), "k_new"),
                   v_new = tl.empty({most, d}, cube.v.dtype(), "v_new");
  const RowRange gather_mine = tl.shard_rows(kv_gather);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i % cube.kv_parts != cube.kv_part) continue;
    const auto inner = tl.scratch_scope();
    const TokenRun& r = runs[i];
    const RowRange rows{r.row, r.count};
    const tl::Tensor kv = tl.rows(out, 0, u32(r.count));
    column_parallel(tl, h, f, a, rows, w.wkv, kv, in);
    if (f.qkv_bias) tl.add(kv, kv_bias, &kv);
    const tl::Tensor cos = rope_rows(s.rope_cos, rows), sin = rope_rows(s.rope_sin, rows);
    const tl::Tensor k_cols = tl.cols(kv, 0, d);  // one op a statement: arguments have no order
    tl.copy(nn::rope(tl, k_cols, cos, sin, 1, d), k_cols);
    const tl::Tensor k = tl.rows(k_new, 0, u32(r.count)), v = tl.rows(v_new, 0, u32(r.count));
    tl.copy(tl.cols(kv, 0, d), k);
    tl.copy(tl.cols(kv, d, d), v);
    const PromptKeys& p = s.prompts.at(r.request);
    gqa::store_rows(tl, cube.k, {p.cache_row + r.pos0, r.count}, k);
    gqa::store_rows(tl, cube.v, {p.cache_row + r.pos0, r.count}, v);
    // The gathered rows as the cache holds them (its dtype), fp32 for the collective.
    tl.copy(k, tl.cols(kv, 0, d));
    tl.copy(v, tl.cols(kv, d, d));
    tl.store(kv_gather, {gather_mine.begin + r.kv_row, r.count}, kv);
  }
}

// The cube's query heads over the lane's runs: a tile is a run's rows of every head
// (head-major) against its request's keys, run_rows at a time: the cached ones from the
// group's cache, the new ones from the gathered buffer; causal, flash pairs pipelined.
void attend(tl::Ctx& tl, const PrefillPlan& s, const Here& h, const CubeAttention& cube) {
  const PrefillForm& f = s.form;
  const std::uint32_t sip = tl.sip().value, d = f.head_dim, n = f.run_rows, most = cube.heads * n;
  const DeviceTensor &q = s.q.at(sip), &o = s.o.at(sip), &gathered = s.kv_gather.at(sip);
  const RowRange q_mine = tl.shard_rows(q), o_mine = tl.shard_rows(o),
                 g_mine = tl.shard_rows(gathered);
  const auto frame = tl.persistent_scope();  // the pairs' work buffers
  const auto scope = tl.scratch_scope();
  gqa::AttentionParams p;
  p.d = d;
  p.t_q = 0;  // positions are absolute: a tile's first query is its run's first position
  p.s = 0;
  p.scale = 1.0f / std::sqrt(static_cast<float>(d));
  p.pes = f.chunks;
  p.dtype = q.dtype();
  const std::array<gqa::FlashWork, 2> work{gqa::FlashWork::make(tl, most, n, d, p.dtype, 0, false),
                                           gqa::FlashWork::make(tl, most, n, d, p.dtype, 0, false)};
  gqa::FlashPairs pairs(tl, p, gqa::Variant::Pipelined, work);
  const tl::Tensor q_tile = tl.empty({most, d}, p.dtype, "q_tile"),
                   state = tl.empty({most, d + 2}, DType::fp32, "state");
  const tl::Tensor out = tl.empty({most, d}, DType::fp32, "out"),
                   cast = tl.empty({most, d}, p.dtype, "o_cast");
  constexpr std::size_t kBuffers = 4;
  std::array<tl::Tensor, kBuffers> k_buf, v_buf, staged;
  for (std::size_t b = 0; b < kBuffers; ++b) {
    k_buf[b] = tl.empty({n, d}, p.dtype, "k_chunk");
    v_buf[b] = tl.empty({n, d}, p.dtype, "v_chunk");
    staged[b] = tl.empty({n, 2 * d}, DType::fp32, "kv_chunk");
  }
  std::size_t issued = 0;
  for (const TokenRun& r : s.lanes.at(h.lane)) {
    const std::uint32_t m = u32(cube.heads * r.count);
    const tl::Tensor qt = tl.rows(q_tile, 0, m);
    tl.load(q, {q_mine.begin + std::uint64_t{cube.heads} * r.row, m}, &qt);
    const gqa::SoftmaxState st = gqa::SoftmaxState::of(tl, tl.rows(state, 0, m));
    st.reset(tl);
    const gqa::PrefillTile tile{0, cube.heads, r.pos0, r.count, 0};
    // The keys it sees, a pair each: (positions, where they are).
    const PromptKeys& prompt = s.prompts.at(r.request);
    const std::uint64_t last = r.pos0 + r.count - 1;
    struct Keys {
      RowRange positions;
      bool cached;
      std::uint64_t row;
    };
    std::vector<Keys> keys;
    for (std::uint64_t b = 0; b < prompt.cached && b <= last; b += n)
      keys.push_back(
          {{b, std::min<std::uint64_t>(n, prompt.cached - b)}, true, prompt.cache_row + b});
    for (const TokenRun& k : prompt.runs)
      if (k.pos0 <= last) keys.push_back({{k.pos0, k.count}, false, g_mine.begin + k.kv_row});
    std::vector<gqa::FlashPair> pair(keys.size());
    auto fetch = [&](std::size_t j) {
      const std::size_t b = (issued + j) % kBuffers;
      const auto count = u32(keys[j].positions.count);
      const tl::Tensor k = tl.rows(k_buf[b], 0, count), v = tl.rows(v_buf[b], 0, count);
      if (keys[j].cached) {
        gqa::load_rows(tl, cube.k, {keys[j].row, count}, k);
        gqa::load_rows(tl, cube.v, {keys[j].row, count}, v);
      } else {
        const tl::Tensor kv = tl.rows(staged[b], 0, count);
        tl.load(gathered, {keys[j].row, count}, &kv);
        tl.copy(tl.cols(kv, 0, d), k);
        tl.copy(tl.cols(kv, d, d), v);
      }
      pair[j] = gqa::FlashPair{&tile, keys[j].positions, qt, k, v, st};
    };
    if (!keys.empty()) fetch(0);
    for (std::size_t j = 0; j < keys.size(); ++j) {
      if (j + 1 < keys.size()) fetch(j + 1);
      pairs.run(issued + j, pair[j], j + 1 < keys.size() ? &pair[j + 1] : nullptr);
    }
    issued += keys.size();
    gqa::store_output(tl, st, tl.rows(out, 0, m), cast, p.dtype, o,
                      {o_mine.begin + std::uint64_t{cube.heads} * r.row, m});
  }
}

// The cube's heads' share of the attention block's output, run by run: chunk s of the
// partial sums is the run's O times sibling s's shard of W_o^T (the heads' rows, columns
// chunk s), into sums; with the residual x where this cube adds it (Here::adds_residual).
void project_o(tl::Ctx& tl, const PrefillPlan& s, const PrefillWeights& w, const Here& h,
               const CubeAttention& cube) {
  const PrefillForm& f = s.form;
  const std::uint32_t sip = tl.sip().value, d = f.head_dim;
  const DeviceTensor &o = s.o.at(sip), &sums = s.sums.at(sip), &x = s.x.at(sip);
  const std::vector<TokenRun>& runs = s.lanes.at(h.lane);
  const RowRange o_mine = tl.shard_rows(o);
  const auto scope = tl.scratch_scope();
  // Two partial sums by turns where half the TCM holds them: a chunk's GEMMs then
  // do not wait for the store of the one before.
  const std::uint64_t part_bytes = std::uint64_t{f.run_rows} * f.chunk_cols() * 4;
  const std::uint32_t parts = 2 * part_bytes <= tl.tcm_capacity() / 2 ? 2 : 1;
  const tl::Tensor out =
      tl.empty({std::int64_t{parts} * f.run_rows, f.chunk_cols()}, DType::fp32, "o_partial");
  const Stream stream(tl, tl.ref(w.wo, {h.shard_of(w.wo, 0).begin, d}));
  for (std::uint32_t ri = 0; ri < runs.size(); ++ri) {
    const auto inner = tl.scratch_scope();
    const TokenRun& r = runs[ri];
    const tl::Tensor heads =
        cube.heads
            ? tl.load(o, {o_mine.begin + std::uint64_t{cube.heads} * r.row, cube.heads * r.count})
            : tl::Tensor();
    for (std::uint32_t i = 0; i < f.chunks; ++i) {
      const std::uint32_t c = h.sibling(i);
      const RowRange rows = chunk_rows(tl, f, sums, c, r.row, r.count);
      const tl::Tensor part = tl.rows(out, i % parts * f.run_rows, u32(r.count));
      const bool residual = h.adds_residual(ri, c);
      if (residual)
        tl.load(x, chunk_rows(tl, f, x, c, r.row, r.count), &part);
      else if (!cube.heads)  // a cube with no heads adds nothing
        tl.fill(part, 0.0f);
      const RowRange shard = h.shard_of(w.wo, c);
      for (std::uint32_t j = 0; j < cube.heads; ++j) {
        const tl::Tensor head = tl.rows(heads, u32(j * r.count), u32(r.count));
        tl.composite(head, tl.ref(w.wo, {shard.begin + std::uint64_t{j} * d, d}),
                     stream.opts(part, residual || j > 0));
      }
      tl.store(sums, rows, part);
    }
  }
}

}  // namespace

void attention_block(tl::Ctx& tl, const PrefillPlan& s, const PrefillWeights& w, const Here& h,
                     const CubeAttention& cube) {
  tl.phase("qkv_proj");
  if (cube.group != CubeAttention::kNone) project_qkv(tl, s, w, h, cube);
  tl.phase("qkv_gather");
  if (cube.group != CubeAttention::kNone) {
    const auto scope = tl.scratch_scope();
    collectives::run(tl, s.gather_kv.at(cube.group), s.kv_gather);
  }
  tl.phase("attention");
  if (cube.heads > 0) attend(tl, s, h, cube);
  tl.phase("o_proj");
  project_o(tl, s, w, h, cube);
}

}  // namespace kb::layer::prefill
