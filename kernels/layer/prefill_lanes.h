#pragma once
// How a PE of the prefill layer works on its lane's rows with its cube's shards
// (prefill_layer.h): its place, the blocks of its rows, the staging of a stream of a
// sibling's shards, and the column-parallel GEMM over the chunks. Shared by the layer's
// attention and MLP parts.
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/layer/prefill_layer.h"
#include "kernels/nn/linear.h"

namespace kb::layer::prefill {

inline std::uint32_t u32(std::uint64_t v) {
  return static_cast<std::uint32_t>(v);
}

// This PE's place: its lane, its cube (and its rank among the run's cubes) and its lane's
// rows.
struct Here {
  std::uint32_t shards = 1, lane = 0, cube = 0, pes = 1, rank = 0, ranks = 1;
  std::uint64_t rows = 0;  // its lane's tokens
  static Here of(const tl::Ctx& tl, const PrefillPlan& s) {
    Here h;
    h.pes = s.form.chunks;
    h.shards = tl.topology().cubes_per_sip() * h.pes;
    h.lane = tl.pe().value;
    h.cube = tl.cube().value;
    const std::vector<collectives::Rank>& cubes = s.all_reduce.ranks;
    h.ranks = static_cast<std::uint32_t>(cubes.size());
    for (std::uint32_t r = 0; r < h.ranks; ++r)
      if (cubes[r].front().sip == tl.sip() && cubes[r].front().cube == tl.cube()) h.rank = r;
    for (const TokenRun& r : s.lanes.at(h.lane)) h.rows = std::max(h.rows, r.row + r.count);
    return h;
  }
  // Whether this cube adds the residual into its partial sums of chunk c of the lane's
  // block (or run) i: one cube of the run's for each, by turns, so the all-reduce leaves
  // the residual stream's next value and no pass adds it after.
  bool adds_residual(std::uint32_t i, std::uint32_t c) const {
    return (i * pes + c) % ranks == rank;
  }
  // The sibling whose shard this PE streams at step i of a sweep over the cube's PEs: PE p
  // starts at its own, so at every step the cube's PEs read P different channels (all
  // starting at sibling 0, they would all wait on one channel's bandwidth).
  std::uint32_t sibling(std::uint32_t i) const { return (i + lane) % pes; }
  // The shard of t that PE `pe` of this cube holds (tensors sharded a PE each).
  RowRange shard_of(const DeviceTensor& t, std::uint32_t pe) const {
    const std::uint64_t per = t.rows() / shards;
    return {(std::uint64_t{cube} * pes + pe) * per, per};
  }
};

// Staging for a stream of refs like `like` (one of a sibling's shards): four tiles of
// nn::stream_tile_rows rows, allocated once for every composite of the stream.
struct Stream {
  std::uint32_t tile_rows = 1;
  tl::Tensor stage;
  Stream(tl::Ctx& tl, const tl::Tensor& like)
      : tile_rows(nn::stream_tile_rows(tl, like)),
        stage(tl.empty({4 * static_cast<std::int64_t>(tile_rows), like.cols()}, like.dtype(),
                       "stage")) {}
  tl::CompositeOpts opts(const tl::Tensor& out, bool accumulate) const {
    tl::CompositeOpts o;
    o.tile_rows = tile_rows;
    o.stage = &stage;
    o.out = &out;
    o.accumulate = accumulate;
    return o;
  }
};

// The lane's rows [0, rows) in the fewest blocks of at most `most` rows, as even as whole
// groups of `unit` rows (the GEMM array's) allow: a short last block would stream every
// weight for few rows. A block may hold parts of runs.
std::vector<RowRange> row_blocks(std::uint64_t rows, std::uint32_t most, std::uint32_t unit);

// out [n, cols] = sum over k of chunk k of the lane's rows `rows` of a times sibling k's shard of w
// (the cube's columns, rows chunk k; of a shard of several parts, part `part`): the
// column-parallel GEMM, K/P rows a step.
void column_parallel(tl::Ctx& tl, const Here& h, const PrefillForm& f, const DeviceTensor& a,
                     RowRange rows, const DeviceTensor& w, const tl::Tensor& out,
                     const std::array<tl::Tensor, 2>& in, std::uint32_t part = 0);

// The attention block of the layer on this PE (prefill_attention.cpp): Q, K and V of its
// lane's rows and its cube's heads, the group's gather of K and V, the attention, and O's
// projection into the partial sums.
void attention_block(tl::Ctx& tl, const PrefillPlan& s, const PrefillWeights& w, const Here& h,
                     const CubeAttention& cube);

}  // namespace kb::layer::prefill
