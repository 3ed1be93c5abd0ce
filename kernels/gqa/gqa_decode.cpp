#include "kernels/gqa/gqa_decode.h"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

#include "kernels/gqa/helpers.h"

namespace kb::gqa {

std::optional<Variant> parse_variant(const std::string& name) {
  if (name == "naive") return Variant::Naive;
  if (name == "pipelined") return Variant::Pipelined;
  if (name == "fused") return Variant::Fused;
  return std::nullopt;
}

const char* variant_name(Variant v) {
  switch (v) {
    case Variant::Naive: return "naive";
    case Variant::Pipelined: return "pipelined";
    case Variant::Fused: return "fused";
  }
  return "?";
}

namespace {

struct Rank {
  const DecodeParams& p;
  const DecodeGroup& group;
  std::uint32_t m_rows;  // the query rows of the block being swept (G * T_q when they fit)
  std::vector<RowRange> tiles;
  tl::Tensor q;
  std::size_t qk_issued = 0;  // tiles whose Q.K^T the previous block already issued
  // Row r of the block is query position q_pos0 + r % q_period.
  std::int64_t q_pos0 = 0;
  std::uint32_t q_period = 1;
};

// A [rows, cols] view of the first rows*cols elements of a flat [N, 1] buffer.
tl::Tensor block(tl::Ctx& tl, const tl::Tensor& flat, std::uint32_t rows, std::uint32_t cols) {
  const tl::Tensor head = tl.rows(flat, 0, rows * cols);
  return tl.view(head, {rows, cols});
}

// Scores of one tile, scaled and (for the tiles that reach past the first query
// position) causally masked.
tl::Tensor scaled_scores(tl::Ctx& tl, const Rank& r, const tl::Tensor& raw, const RowRange& tile) {
  tl::Tensor s = tl.mul(raw, r.p.scale);
  if (r.p.causal && static_cast<std::int64_t>(tile.end()) - 1 > r.q_pos0) {
    const tl::Tensor bias = tl.causal_bias(r.m_rows, static_cast<std::uint32_t>(tile.count), r.q_pos0, r.q_period,
                                           static_cast<std::int64_t>(tile.begin));
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
  const tl::Tensor l_scaled = tl.mul(st.l, alpha);
  const tl::Tensor p_sum = tl.sum(p, 1);
  tl.add(l_scaled, p_sum, &st.l);
  tl.copy(m_new, st.m);
  return p;
}

// The first `rows` rows of a buffer sized for the largest block (itself when they are all).
tl::Tensor fit(tl::Ctx& tl, const tl::Tensor& t, std::uint32_t rows) {
  return t.rows() == rows ? t : tl.rows(t, 0, rows);
}

void sweep_naive(tl::Ctx& tl, const Rank& r, const SoftmaxState& st, const tl::Tensor& alpha_buffer) {
  st.reset(tl);
  const tl::Tensor alpha = fit(tl, alpha_buffer, r.m_rows);
  for (const RowRange& tile : r.tiles) {
    const auto scope = tl.scratch_scope();
    tl::CompositeOpts qk;
    qk.trans_b = true;
    qk.tile_rows = r.p.stream_rows;
    const tl::Tensor k = tl.ref(r.group.k, tile);
    const tl::Tensor raw = tl.composite(r.q, k, qk);
    const tl::Tensor s = scaled_scores(tl, r, raw, tile);
    const tl::Tensor p = softmax_update(tl, st, s, alpha);
    tl::CompositeOpts pv;
    pv.tile_rows = r.p.stream_rows;
    const tl::Tensor p_cast = tl.cast(p, r.p.dtype);
    const tl::Tensor v = tl.ref(r.group.v, tile);
    const tl::Tensor o_tile = tl.composite(p_cast, v, pv);
    const tl::Tensor o_scaled = tl.mul(st.o, alpha);
    tl.add(o_scaled, o_tile, &st.o);
  }
}

// Streaming tiles in flight per composite: enough to cover the HBM latency plus one
// tile's GEMM with DMA.
constexpr std::uint32_t kStageBuffers = 4;

// Two of each buffer a tile's work holds across iterations, so tile j+1's streaming
// never waits for tile j's scope to end. Allocated as first used: tile 0's Q.K^T goes
// out after only its own two buffers, the rest of the setup runs under its K stream.
struct PingPong {
  std::array<tl::Tensor, 2> s, p, pv, alpha, stage_k, stage_v;
  std::array<tl::Tensor, 3> v;  // prefetched V tiles: tile j+1's loads while tile j-1's P.V reads
  // Split blocks: the rank's K and V, loaded tile by tile by the first block, read by both.
  tl::Tensor k_all, v_all;
  std::size_t k_tiles = 0, v_tiles = 0;  // tiles loaded so far
};

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
tl::Tensor resident_tile(tl::Ctx& tl, const Rank& r, const DeviceTensor& src, tl::Tensor& all, std::size_t& loaded,
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

void issue_qk(tl::Ctx& tl, const Rank& r, PingPong& b, std::size_t j) {
  const DecodeParams& prm = r.p;
  qk_buffers(tl, prm, b, j % 2);
  const tl::Tensor out = block(tl, b.s[j % 2], r.m_rows, static_cast<std::uint32_t>(r.tiles[j].count));
  tl::CompositeOpts qk;
  qk.trans_b = true;
  qk.tile_rows = prm.stream_rows;
  qk.out = &out;
  if (prm.split_rows > 0) {
    tl.composite(r.q, resident_tile(tl, r, r.group.k, b.k_all, b.k_tiles, j, "K"), qk);
    return;
  }
  qk.stage = &b.stage_k[j % 2];
  const tl::Tensor k = tl.ref(r.group.k, r.tiles[j]);
  tl.composite(r.q, k, qk);
}

// `state` makes the block's softmax state: called once tile 0's Q.K^T is on its way.
// `next` is called once the last P.V is issued, before the program waits for it.
void sweep_pipelined(tl::Ctx& tl, const Rank& r, const std::function<SoftmaxState()>& state, PingPong& b,
                     const std::function<void()>& next) {
  const DecodeParams& prm = r.p;
  const auto n_tiles = r.tiles.size();
  auto cols = [&](std::size_t j) { return static_cast<std::uint32_t>(r.tiles[j].count); };
  // GEMM-bound shapes load each V tile into TCM as its Q.K^T is issued, so its P.V need
  // not wait for the HBM once P is ready; HBM-bound ones stream V (the DMA is busy anyway
  // and the last tile's P.V then waits only for its last streamed rows).
  auto load_v = [&](std::size_t j) {
    if (prm.split_rows > 0) {  // kept in TCM: loaded after the next tile's K (see the loop)
      resident_tile(tl, r, r.group.v, b.v_all, b.v_tiles, j, "V");
      return;
    }
    if (!prm.prefetch_v) return;
    if (!b.v[j % 3].valid()) b.v[j % 3] = tl.persistent({prm.tile_rows, prm.d}, prm.dtype, "V");
    const tl::Tensor into = tl.rows(b.v[j % 3], 0, cols(j));
    tl.load(r.group.v, r.tiles[j], &into);
  };
  if (r.qk_issued == 0) issue_qk(tl, r, b, 0);
  if (prm.split_rows == 0) load_v(0);
  const SoftmaxState st = state();
  st.reset(tl);
  std::array<tl::Tensor, 2> pv, alpha;  // this block's rows of them
  auto update_o = [&](std::size_t j) {
    const tl::Tensor o_scaled = tl.mul(st.o, alpha[j % 2]);
    tl.add(o_scaled, pv[j % 2], &st.o);
  };
  for (std::size_t j = 0; j < n_tiles; ++j) {
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
                             ? resident_tile(tl, r, r.group.v, b.v_all, b.v_tiles, j, "V")
                             : (prm.prefetch_v ? tl.rows(b.v[j % 3], 0, cols(j)) : tl.ref(r.group.v, r.tiles[j]));
    tl.composite(p_out, v, pv_opts);
    if (j > 0) update_o(j - 1);  // the previous tile's P.V is done by now
  }
  next();
  update_o(n_tiles - 1);
}

// One scheduler command per tile. Three sets of work buffers: tile j+1 and j+2 are
// already streaming K while tile j finishes; a set is reused once its tile is done. A
// flash tile takes work buffers of at least its rows, so a smaller block uses them whole.
using FusedSets = std::array<FlashWork, 3>;

FusedSets fused_sets(tl::Ctx& tl, const DecodeParams& p) {
  FusedSets sets;
  for (FlashWork& b : sets) b = FlashWork::make(tl, p.row_block, p.tile_rows, p.d, p.dtype, kStageBuffers * p.stream_rows);
  return sets;
}

void sweep_fused(tl::Ctx& tl, const Rank& r, const SoftmaxState& st, const FusedSets& sets) {
  st.reset(tl);
  for (std::size_t j = 0; j < r.tiles.size(); ++j) {
    const RowRange& tile = r.tiles[j];
    const FlashWork& b = sets[j % sets.size()];
    const tl::Tensor k = tl.ref(r.group.k, tile);
    const tl::Tensor v = tl.ref(r.group.v, tile);
    tl::FlashTile f = flash_args(r.q, k, v, st, b, r.p.scale);
    f.causal = r.p.causal && static_cast<std::int64_t>(tile.end()) - 1 > r.q_pos0;
    f.q_pos0 = r.q_pos0;
    f.q_period = r.q_period;
    f.k_pos0 = static_cast<std::int64_t>(tile.begin);
    f.stream_rows = r.p.stream_rows;
    tl.flash_tile(f);
  }
}

}  // namespace

std::vector<RowBlock> row_blocks(std::uint32_t g, std::uint32_t t_q, std::uint32_t row_block, std::uint32_t split_rows) {
  std::vector<RowBlock> out;
  if (split_rows > 0) {
    const std::uint64_t rows = static_cast<std::uint64_t>(g) * t_q;
    return {{{0, split_rows}, 0, t_q}, {{split_rows, rows - split_rows}, 0, t_q}};
  }
  if (t_q <= row_block) {
    const std::uint32_t heads = row_block / t_q;
    for (std::uint32_t h = 0; h < g; h += heads)
      out.push_back({{static_cast<std::uint64_t>(h) * t_q, static_cast<std::uint64_t>(std::min(heads, g - h)) * t_q}, 0,
                     t_q});
    return out;
  }
  for (std::uint32_t h = 0; h < g; ++h)
    for (std::uint64_t t = 0; t < t_q; t += row_block) {
      const std::uint64_t n = std::min<std::uint64_t>(row_block, t_q - t);
      out.push_back({{static_cast<std::uint64_t>(h) * t_q + t, n}, t, n});
    }
  return out;
}

void gqa_decode(tl::Ctx& tl, std::shared_ptr<const DecodeParams> params) {
  const DecodeParams& p = *params;
  if (tl.pe().value >= p.pes) return;
  GroupGeometry geo;
  std::uint32_t cube_index = 0;
  const DecodeGroup* group = find_group(tl, p.groups, p.cubes, geo, cube_index);
  if (group == nullptr) return;  // this cube holds no KV head

  Rank r{p, *group, p.row_block, {}, {}};
  const RowRange mine = tl.shard_rows(group->k);
  for (std::uint64_t row = mine.begin; row < mine.end(); row += p.tile_rows)
    r.tiles.push_back({row, std::min<std::uint64_t>(p.tile_rows, mine.end() - row)});
  const std::vector<RowBlock> blocks = row_blocks(p.g, p.t_q, p.row_block, p.split_rows);
  std::vector<Rank> ranks(blocks.size(), r);  // one per block
  const RowRange q_rows = tl.shard_rows(group->q);
  // Level 1: even owners' segments reduce on the row-first tree, odd owners' on the
  // column-first one, so the mesh links far from the root carry half the state each.
  const TreeNode cube_node = tl.pe().value % 2 == 0 ? center_node(cube_index, geo.w, geo.h)
                                                    : center_node_yx(cube_index, geo.w, geo.h);
  // The state buffer: sized for the largest block, or (split blocks, which overlap) for
  // all rows, each block in its own.
  SoftmaxState whole;
  auto state_of = [&](const RowBlock& blk) {
    const std::uint32_t rows = p.split_rows > 0 ? p.g * p.t_q : p.row_block;
    if (!whole.packed.valid()) whole = SoftmaxState::of(tl, tl.persistent({rows, p.d + 2}, DType::fp32, "state"));
    const auto begin = static_cast<std::uint32_t>(p.split_rows > 0 ? blk.rows.begin : 0);
    return blk.rows.count == rows ? whole
                                  : SoftmaxState::of(tl, tl.rows(whole.packed, begin, static_cast<std::uint32_t>(blk.rows.count)));
  };
  tl::Tensor naive_alpha;
  PingPong pipeline;
  FusedSets fused;
  // Block i's Q and its first Q.K^Ts; for a split block issued by the block before it,
  // so that the GEMM engine goes on while that block's program waits for its last P.V.
  auto start = [&](std::size_t i) {
    Rank& rk = ranks[i];
    const RowBlock& blk = blocks[i];
    rk.m_rows = static_cast<std::uint32_t>(blk.rows.count);
    rk.q_pos0 = static_cast<std::int64_t>(p.s - p.t_q + blk.pos0);
    rk.q_period = static_cast<std::uint32_t>(blk.positions);
    if (rk.tiles.empty() || rk.q.valid()) return;
    // Q's load gates only the first GEMM: the first K tile streams meanwhile.
    rk.q = tl.load(group->q, {q_rows.begin + blk.rows.begin, blk.rows.count});
    if (i == 0 || p.split_rows == 0) return;
    rk.qk_issued = std::min<std::size_t>(2, rk.tiles.size());
    for (std::size_t j = 0; j < rk.qk_issued; ++j) issue_qk(tl, rk, pipeline, j);
  };
  struct Final {
    RowRange own;  // rows of the block
    std::uint64_t block_begin;
    tl::Tensor state;  // the block's state
  };
  std::vector<Final> finals;  // the root's parts
  auto block = [&](std::size_t i) {
    const RowBlock& blk = blocks[i];
    Rank& rk = ranks[i];
    tl.phase(blocks.size() > 1 ? "sweep, query rows " + std::to_string(blk.rows.begin) : std::string("sweep"));
    start(i);
    SoftmaxState st;
    auto block_state = [&] { return st = state_of(blk); };
    auto state_rows = [&](RowRange rows) {
      return tl.rows(st.packed, static_cast<std::uint32_t>(rows.begin), static_cast<std::uint32_t>(rows.count));
    };
    // The block's reduce, scattered by rows (docs/gqa_decode.md, Reduce to root): its
    // rows are split into P parts, part j owned by PE j (none when there are fewer rows
    // than P). Level 2 (IPCQ) leaves owner j holding part j merged over the cube; Level 1
    // (NOC) reduces it over the group's cubes on the center-root tree, every send one
    // mesh hop; at the root cube each owner divides by l and stores its rows of O once
    // every block is issued (the program waits for the merges there).
    auto reduce = [&] {
      const std::uint32_t me = tl.pe().value;
      auto span = [&](std::uint32_t lo, std::uint32_t hi) {  // the rows of parts [lo, hi)
        const std::uint64_t begin = shard_rows(rk.m_rows, p.pes, lo).begin;
        return RowRange{begin, shard_rows(rk.m_rows, p.pes, hi - 1).end() - begin};
      };
      auto on_pe = [&](std::uint32_t pe) { return PeCoord{tl.sip(), tl.cube(), PeId(pe)}; };
      tl.phase("reduce level 2");
      if ((p.pes & (p.pes - 1)) == 0) {
        // Recursive halving: in round `half` = P/2, ..., 1, PE p keeps the half of its
        // parts on its side of bit `half`, sends the other half to p ^ half and merges
        // that PE's copy of its own: log2 P messages of 1/2, 1/4, ... of the rows.
        std::uint32_t lo = 0, hi = p.pes;
        for (std::uint32_t half = p.pes / 2; half >= 1; half /= 2) {
          const bool upper = (me & half) != 0;
          const std::uint32_t mid = lo + half;
          const RowRange give = upper ? span(lo, mid) : span(mid, hi), keep = upper ? span(mid, hi) : span(lo, mid);
          if (give.count > 0) tl.send(on_pe(me ^ half), state_rows(give), kTagLevel2);
          if (keep.count > 0) recv_merge(tl, state_rows(keep), on_pe(me ^ half), kTagLevel2);
          (upper ? lo : hi) = mid;
        }
      } else {
        // Every PE sends each owner its part, rotated so no owner is everyone's first.
        for (std::uint32_t k = 1; k < p.pes; ++k)
          if (const RowRange part = span((me + k) % p.pes, (me + k) % p.pes + 1); part.count > 0)
            tl.send(on_pe((me + k) % p.pes), state_rows(part), kTagLevel2);
        if (span(me, me + 1).count > 0)
          for (std::uint32_t k = 1; k < p.pes; ++k)
            recv_merge(tl, state_rows(span(me, me + 1)), on_pe((me + p.pes - k) % p.pes), kTagLevel2);
      }
      const RowRange own = span(me, me + 1);
      if (own.count == 0) return;
      // Level 1 in segments (DecodeParams::segment_rows): a parent passes a segment on
      // once its children's copies are merged, while the next ones are still on their way.
      // With one cube there is no Level 1: the rows are all merged at once, one store.
      const std::vector<RowRange> own_segments = segments(own, p.cubes > 1 ? p.segment_rows : 0);
      std::vector<tl::Tensor> seg_states;
      for (const RowRange& seg : own_segments) seg_states.push_back(state_rows(seg));
      tl.phase("reduce level 1");
      for (const tl::Tensor& seg : seg_states) {
        for (const std::uint32_t child : cube_node.children)
          recv_merge(tl, seg, PeCoord{tl.sip(), geo.cube_at(child), PeId(me)}, kTagLevel1);
        if (cube_node.parent) tl.send(PeCoord{tl.sip(), geo.cube_at(*cube_node.parent), PeId(me)}, seg, kTagLevel1);
      }
      if (cube_node.parent) return;
      for (const RowRange& seg : own_segments) finals.push_back({seg, blk.rows.begin, st.packed});
    };
    // Each sweep resets the state once its first GEMM is on its way.
    if (rk.tiles.empty()) {
      block_state().reset(tl);  // an empty state: m = -inf contributes nothing to the reduce
      reduce();                 // as its peers do
      return;
    }
    switch (p.variant) {
      case Variant::Naive:
        if (!naive_alpha.valid()) naive_alpha = tl.persistent({p.row_block, 1}, DType::fp32, "alpha");
        sweep_naive(tl, rk, block_state(), naive_alpha);
        break;
      case Variant::Pipelined:
        sweep_pipelined(tl, rk, block_state, pipeline, [&] {
          if (p.split_rows > 0 && i + 1 < blocks.size()) start(i + 1);
        });
        break;
      case Variant::Fused:
        if (!fused[0].s.valid()) fused = fused_sets(tl, p);
        sweep_fused(tl, rk, block_state(), fused);
        break;
    }
    reduce();
  };
  auto store = [&] {
    for (const Final& f : std::exchange(finals, {})) {
      tl.phase("store O");
      const SoftmaxState part = SoftmaxState::of(
          tl, tl.rows(f.state, static_cast<std::uint32_t>(f.own.begin), static_cast<std::uint32_t>(f.own.count)));
      const tl::Tensor out = tl.div(part.o, part.l);
      const tl::Tensor o = p.dtype == DType::fp32 ? out : tl.cast(out, p.dtype);
      store_rows(tl, group->o, {f.block_begin + f.own.begin, f.own.count}, o);
    }
  };
  if (p.split_rows > 0) {  // one scope: the first block's reduce runs on under the second
    const auto scope = tl.scratch_scope();
    for (std::size_t i = 0; i < blocks.size(); ++i) block(i);
    store();
    return;
  }
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto scope = tl.scratch_scope();
    block(i);
    store();
  }
}

}  // namespace kb::gqa
