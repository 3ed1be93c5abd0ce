#include "kernels/gqa/gqa_decode.h"

#include <algorithm>
#include <array>

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
tl::Tensor softmax_update(tl::Ctx& tl, SoftmaxState& st, const tl::Tensor& s, const tl::Tensor& alpha) {
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

void sweep_naive(tl::Ctx& tl, const Rank& r, SoftmaxState& st, const tl::Tensor& alpha_buffer) {
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
// never waits for tile j's scope to end.
struct PingPong {
  std::array<tl::Tensor, 2> s, p, pv, alpha, stage_k, stage_v;
};

PingPong pipeline_buffers(tl::Ctx& tl, const DecodeParams& p) {
  PingPong b;
  const std::uint32_t t = p.tile_rows, m = p.row_block, d = p.d;
  for (int i = 0; i < 2; ++i) {
    b.s[i] = tl.persistent({m * t, 1}, DType::fp32, "S");
    b.p[i] = tl.persistent({m * t, 1}, p.dtype, "P");
    b.pv[i] = tl.persistent({m, d}, DType::fp32, "PV");
    b.alpha[i] = tl.persistent({m, 1}, DType::fp32, "alpha");
    b.stage_k[i] = tl.persistent({kStageBuffers * p.stream_rows, d}, p.dtype, "stage_k");
    b.stage_v[i] = tl.persistent({kStageBuffers * p.stream_rows, d}, p.dtype, "stage_v");
  }
  return b;
}

void sweep_pipelined(tl::Ctx& tl, const Rank& r, SoftmaxState& st, const PingPong& buffers) {
  PingPong b = buffers;
  for (int i = 0; i < 2; ++i) {
    b.pv[i] = fit(tl, buffers.pv[i], r.m_rows);
    b.alpha[i] = fit(tl, buffers.alpha[i], r.m_rows);
  }
  const auto n_tiles = r.tiles.size();
  auto cols = [&](std::size_t j) { return static_cast<std::uint32_t>(r.tiles[j].count); };
  auto issue_qk = [&](std::size_t j) {
    const tl::Tensor out = block(tl, b.s[j % 2], r.m_rows, cols(j));
    tl::CompositeOpts qk;
    qk.trans_b = true;
    qk.tile_rows = r.p.stream_rows;
    qk.out = &out;
    qk.stage = &b.stage_k[j % 2];
    const tl::Tensor k = tl.ref(r.group.k, r.tiles[j]);
    tl.composite(r.q, k, qk);
  };
  auto update_o = [&](std::size_t j) {
    const tl::Tensor o_scaled = tl.mul(st.o, b.alpha[j % 2]);
    tl.add(o_scaled, b.pv[j % 2], &st.o);
  };
  if (n_tiles > 0) issue_qk(0);
  for (std::size_t j = 0; j < n_tiles; ++j) {
    if (j + 1 < n_tiles) issue_qk(j + 1);  // streams while this tile's softmax runs
    const auto scope = tl.scratch_scope();
    const tl::Tensor raw = block(tl, b.s[j % 2], r.m_rows, cols(j));
    const tl::Tensor s = scaled_scores(tl, r, raw, r.tiles[j]);
    const tl::Tensor p_out = block(tl, b.p[j % 2], r.m_rows, cols(j));
    const tl::Tensor p = softmax_update(tl, st, s, b.alpha[j % 2]);
    tl.copy(p, p_out);
    tl::CompositeOpts pv;
    pv.tile_rows = r.p.stream_rows;
    pv.out = &b.pv[j % 2];
    pv.stage = &b.stage_v[j % 2];
    const tl::Tensor v = tl.ref(r.group.v, r.tiles[j]);
    tl.composite(p_out, v, pv);
    if (j > 0) update_o(j - 1);  // the previous tile's P.V is done by now
  }
  if (n_tiles > 0) update_o(n_tiles - 1);
}

// One scheduler command per tile. Three sets of work buffers: tile j+1 and j+2 are
// already streaming K while tile j finishes; a set is reused once its tile is done. A
// flash tile takes work buffers of at least its rows, so a smaller block uses them whole.
struct FusedSet {
  tl::Tensor s, p, pv, m_new, alpha, rowsum, stage_k, stage_v;
};
using FusedSets = std::array<FusedSet, 3>;

FusedSets fused_sets(tl::Ctx& tl, const DecodeParams& p) {
  const std::uint32_t t = p.tile_rows, m = p.row_block, d = p.d;
  FusedSets sets;
  for (FusedSet& b : sets)
    b = {tl.persistent({m * t, 1}, DType::fp32, "S"), tl.persistent({m * t, 1}, p.dtype, "P"), tl.persistent({m, d}, DType::fp32, "PV"),
         tl.persistent({m, 1}, DType::fp32, "m_new"), tl.persistent({m, 1}, DType::fp32, "alpha"),
         tl.persistent({m, 1}, DType::fp32, "rowsum"),
         tl.persistent({kStageBuffers * p.stream_rows, d}, p.dtype, "stage_k"),
         tl.persistent({kStageBuffers * p.stream_rows, d}, p.dtype, "stage_v")};
  return sets;
}

void sweep_fused(tl::Ctx& tl, const Rank& r, SoftmaxState& st, const FusedSets& sets) {
  for (std::size_t j = 0; j < r.tiles.size(); ++j) {
    const RowRange& tile = r.tiles[j];
    const FusedSet& b = sets[j % sets.size()];
    const tl::Tensor k = tl.ref(r.group.k, tile);
    const tl::Tensor v = tl.ref(r.group.v, tile);
    tl::FlashTile f;
    f.q = &r.q;
    f.k = &k;
    f.v = &v;
    f.m = &st.m;
    f.l = &st.l;
    f.o = &st.o;
    f.scale = r.p.scale;
    f.causal = r.p.causal && static_cast<std::int64_t>(tile.end()) - 1 > r.q_pos0;
    f.q_pos0 = r.q_pos0;
    f.q_period = r.q_period;
    f.k_pos0 = static_cast<std::int64_t>(tile.begin);
    f.stream_rows = r.p.stream_rows;
    f.s = &b.s;
    f.p = &b.p;
    f.pv = &b.pv;
    f.m_new = &b.m_new;
    f.alpha = &b.alpha;
    f.rowsum = &b.rowsum;
    f.stage_k = &b.stage_k;
    f.stage_v = &b.stage_v;
    tl.flash_tile(f);
  }
}

}  // namespace

std::vector<RowBlock> row_blocks(std::uint32_t g, std::uint32_t t_q, std::uint32_t row_block) {
  std::vector<RowBlock> out;
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
  const std::vector<RowBlock> blocks = row_blocks(p.g, p.t_q, p.row_block);
  const RowRange q_rows = tl.shard_rows(group->q), o_rows = tl.shard_rows(group->o);
  const TreeNode pe_node = binomial_node(tl.pe().value, p.pes);
  const TreeNode cube_node = center_node(cube_index, geo.w, geo.h);
  SoftmaxState whole;  // the state buffer, sized for the largest block
  tl::Tensor naive_alpha;
  PingPong pipeline;
  FusedSets fused;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const RowBlock& blk = blocks[i];
    const auto scope = tl.scratch_scope();
    r.m_rows = static_cast<std::uint32_t>(blk.rows.count);
    r.q_pos0 = static_cast<std::int64_t>(p.s - p.t_q + blk.pos0);
    r.q_period = static_cast<std::uint32_t>(blk.positions);
    tl.phase(blocks.size() > 1 ? "sweep, query rows " + std::to_string(blk.rows.begin) : std::string("sweep"));
    if (!r.tiles.empty()) r.q = tl.load(group->q, {q_rows.begin + blk.rows.begin, blk.rows.count});  // gates the sweep
    if (i == 0) {
      whole = SoftmaxState::empty(tl, p.row_block, p.d);
      if (!r.tiles.empty()) {
        if (p.variant == Variant::Naive) naive_alpha = tl.persistent({p.row_block, 1}, DType::fp32, "alpha");
        if (p.variant == Variant::Pipelined) pipeline = pipeline_buffers(tl, p);
        if (p.variant == Variant::Fused) fused = fused_sets(tl, p);
      }
    } else {
      whole.reset(tl);
    }
    SoftmaxState st = r.m_rows == p.row_block ? whole : SoftmaxState::of(tl, tl.rows(whole.packed, 0, r.m_rows));
    if (!r.tiles.empty()) {
      switch (p.variant) {
        case Variant::Naive: sweep_naive(tl, r, st, naive_alpha); break;
        case Variant::Pipelined: sweep_pipelined(tl, r, st, pipeline); break;
        case Variant::Fused: sweep_fused(tl, r, st, fused); break;
      }
    }

    // Level 2: binomial tree over the cube's PEs (IPCQ), root PE 0.
    tl.phase("reduce level 2");
    for (const std::uint32_t child : pe_node.children)
      recv_merge(tl, st, PeCoord{tl.sip(), tl.cube(), PeId(child)}, kTagLevel2);
    if (pe_node.parent) {
      send_state(tl, PeCoord{tl.sip(), tl.cube(), PeId(*pe_node.parent)}, st, kTagLevel2);
      continue;
    }
    // Level 1: center-root reduce over the group's cubes (NOC), PE 0 of each cube.
    tl.phase("reduce level 1");
    for (const std::uint32_t child : cube_node.children)
      recv_merge(tl, st, PeCoord{tl.sip(), geo.cube_at(child), PeId(0)}, kTagLevel1);
    if (cube_node.parent) {
      send_state(tl, PeCoord{tl.sip(), geo.cube_at(*cube_node.parent), PeId(0)}, st, kTagLevel1);
      continue;
    }
    // The group root: O = O~ / l for the block's rows, in the storage dtype.
    tl.phase("store O");
    const tl::Tensor out = tl.div(st.o, st.l);
    const tl::Tensor o = p.dtype == DType::fp32 ? out : tl.cast(out, p.dtype);
    tl.store(group->o, {o_rows.begin + blk.rows.begin, blk.rows.count}, o);
  }
}

}  // namespace kb::gqa
