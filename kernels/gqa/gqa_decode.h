#pragma once
// GQA decode with sequence parallelism (docs/gqa_decode.md). The KV of one head is sharded
// contiguously over a CUBE Group of C cubes x P PEs (rank = cube_in_group * P + pe); the
// G query heads of the group are M-folded into one [G*T_q, d] operand, so one Q.K^T
// serves all of them. Each rank sweeps its KV in tiles with online softmax, then a
// 2-level reduce scattered by rows merges the (m, l, O) states: PE j of every cube owns
// segment j of the state rows; Level 2 (IPCQ, recursive halving) merges each segment
// over the cube at its owner, Level 1 (NOC) over the group's cubes on a center-root tree
// (row-first for even owners, column-first for odd ones) with every send one mesh hop,
// and each owner of the root cube normalises and stores its rows of O.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gqa/helpers.h"
#include "kernels/gqa/variant.h"
#include "kernels/tl/ctx.h"

namespace kb::gqa {


// The tensors of one group (one KV head): q [G*T_q, d] replicated over the group,
// k and v [S, d] sharded 2-D over it, o [G*T_q, d] row-wise over the root cube's PEs.
struct DecodeGroup {
  DeviceTensor q, k, v, o;
  std::uint32_t cube_start = 0;
};

struct DecodeParams : AttentionParams {
  std::uint32_t g = 8;
  std::uint32_t cubes = 8;  // C
  Variant variant = Variant::Pipelined;
  std::uint32_t tile_rows = 512;    // KV rows per sweep tile
  std::uint32_t stream_rows = 128;  // rows per composite streaming tile
  bool prefetch_v = false;          // pipelined: V tiles loaded into TCM ahead (GEMM-bound shapes)
  // Query rows swept at a time: G * T_q when they fit TCM beside the pipeline, else
  // blocks of whole heads or of one head's positions, each swept, reduced and stored.
  std::uint32_t row_block = 8;
  // Pipelined, GEMM-bound, all rows one block of several GEMM row passes: the rows are
  // swept as two blocks, the first `split_rows` and the rest, over the rank's K and V
  // loaded into TCM once; the first block reduces while the second's GEMMs run (0: no split).
  std::uint32_t split_rows = 0;
  // Rows per Level-1 message segment: an owner's rows go down the cube tree in segments
  // so that each level passes one on while the next is still arriving (0: one message).
  std::uint32_t segment_rows = 0;
  std::vector<DecodeGroup> groups;  // the groups of the device the kernel runs on
};

// The query-row blocks of a KV head: rows of its [G * T_q, d] query matrix (head-major),
// each whole heads x all T_q positions, or one head x a run of positions, at most
// `row_block` rows (one block of all G * T_q rows when they fit), or the two blocks of a
// split at `split_rows`.
struct RowBlock {
  RowRange rows;
  std::uint64_t pos0, positions;
};
std::vector<RowBlock> row_blocks(std::uint32_t g, std::uint32_t t_q, std::uint32_t row_block,
                                 std::uint32_t split_rows = 0);

// Message tags of the reduce, one per level.
inline constexpr std::uint32_t kTagLevel2 = 0x100, kTagLevel1 = 0x200;

void gqa_decode(tl::Ctx& tl, std::shared_ptr<const DecodeParams> params);

}  // namespace kb::gqa
