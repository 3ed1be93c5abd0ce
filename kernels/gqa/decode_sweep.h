#pragma once
// The KV sweep of one rank with online softmax (docs/gqa_decode.md, Per rank): the three
// variants' loops over a rank's tiles, shared by decode and batched decode.
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/gqa/gqa_decode.h"
#include "kernels/gqa/helpers.h"
#include "kernels/tl/ctx.h"

namespace kb::gqa {

// `rows` of K and V cut into sweep tiles of `tile_rows` (the last one shorter).
std::vector<RowRange> tiles_of(RowRange rows, std::uint32_t tile_rows);

// What one rank sweeps: tiles of rows of K and V against a block of query rows.
struct SweepRank {
  const DecodeParams& p;
  const DeviceTensor* k;
  const DeviceTensor* v;
  std::int64_t k_pos = 0;  // key position of K's row r: r + k_pos (a batch's page holds a request's rows)
  std::uint32_t m_rows = 0;  // the query rows of the block being swept (G * T_q when they fit)
  std::vector<RowRange> tiles;
  tl::Tensor q;
  std::size_t qk_issued = 0;  // tiles whose Q.K^T the previous block already issued
  // Row r of the block is query position q_pos0 + r % q_period.
  std::int64_t q_pos0 = 0;
  std::uint32_t q_period = 1;
};

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

// One scheduler command per tile. Three sets of work buffers: tile j+1 and j+2 are
// already streaming K while tile j finishes; a set is reused once its tile is done. A
// flash tile takes work buffers of at least its rows, so a smaller block uses them whole.
using FusedSets = std::array<FlashWork, 3>;

FusedSets fused_sets(tl::Ctx& tl, const DecodeParams& p);

// naive: each tile in order, in a scratch scope.
void sweep_naive(tl::Ctx& tl, const SweepRank& r, const SoftmaxState& st, const tl::Tensor& alpha_buffer);
// pipelined: `state` makes the block's softmax state once tile 0's Q.K^T is on its way;
// `next` is called once the last P.V is issued, before the program waits for it;
// `between`, if given, after each tile's P.V is issued, outside any of the sweep's
// scratch scopes (other work the program interleaves: an earlier block's reduce).
void sweep_pipelined(tl::Ctx& tl, const SweepRank& r, const std::function<SoftmaxState()>& state, PingPong& b,
                     const std::function<void()>& next, const std::function<void()>& between = {});
// fused: one tl.flash_tile per tile.
void sweep_fused(tl::Ctx& tl, const SweepRank& r, const SoftmaxState& st, const FusedSets& sets);
// Issues tile j's Q.K^T (a split's second block issues its first ones early).
void issue_qk(tl::Ctx& tl, const SweepRank& r, PingPong& b, std::size_t j);

}  // namespace kb::gqa
