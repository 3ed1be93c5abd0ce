#include "kernels/gqa/gqa_decode.h"

#include <algorithm>
#include <array>
#include <functional>
#include <utility>

#include "kernels/gqa/decode_reduce.h"
#include "kernels/gqa/decode_sweep.h"
#include "kernels/gqa/helpers.h"

namespace kb::gqa {

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

  SweepRank r{p, &group->k, &group->v, 0, p.row_block, {}, {}};
  r.tiles = tiles_of(tl.shard_rows(group->k), p.tile_rows);
  const std::vector<RowBlock> blocks = row_blocks(p.g, p.t_q, p.row_block, p.split_rows);
  std::vector<SweepRank> ranks(blocks.size(), r);  // one per block
  const RowRange q_rows = tl.shard_rows(group->q);
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
    SweepRank& rk = ranks[i];
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
    StoredRows rows;  // rows of the block
    std::uint64_t block_begin;
  };
  std::vector<Final> finals;  // the root's parts
  std::unique_ptr<RootReduce> first_reduce;  // a split's first block's, under way
  std::uint64_t first_begin = 0;
  auto block = [&](std::size_t i) {
    const RowBlock& blk = blocks[i];
    SweepRank& rk = ranks[i];
    tl.phase(blocks.size() > 1 ? "sweep, query rows " + std::to_string(blk.rows.begin) : std::string("sweep"));
    start(i);
    SoftmaxState st;
    auto block_state = [&] { return st = state_of(blk); };
    // The block's reduce (decode_reduce.h); at the root cube each owner divides by l and
    // stores its rows of O once every block is issued (the program waits for the merges
    // there). A split's first block takes what of its reduce need not wait, and the rest
    // between the second block's tiles and after them.
    auto collect = [&](RootReduce& done, std::uint64_t begin) {
      for (StoredRows& seg : done.finish()) finals.push_back({std::move(seg), begin});
    };
    auto reduce = [&] {
      if (first_reduce) {
        collect(*first_reduce, first_begin);
        first_reduce.reset();
      }
      auto red = std::make_unique<RootReduce>(tl, p, geo, cube_index, st.packed, ReduceTags{kTagLevel2, kTagLevel1});
      if (p.split_rows > 0 && i + 1 < blocks.size()) {
        red->advance();
        first_reduce = std::move(red);
        first_begin = blk.rows.begin;
        return;
      }
      collect(*red, blk.rows.begin);
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
        sweep_pipelined(
            tl, rk, block_state, pipeline,
            [&] {
              if (p.split_rows > 0 && i + 1 < blocks.size()) start(i + 1);
            },
            [&] {
              if (first_reduce) first_reduce->advance();
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
      store_state(tl, f.rows, group->o, f.block_begin);
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
