#pragma once
// Batched GQA decode over a paged KV cache (docs/gqa_decode_batch.md). Per KV head, the
// batch's pages are dealt to the C x P ranks of the head's group in contiguous runs (the
// allocator of workloads/gqa_decode_batch); each rank sweeps its runs in request order
// with the decode sweep; a request whose pages span ranks gathers their partial states at
// its first rank, which stores its O (decode's 2-level reduce for a request on every rank).
#include <memory>
#include <vector>

#include "kernels/gqa/gqa_decode.h"

namespace kb::gqa {

// A run of one request's pages on a rank.
struct BatchPiece {
  std::uint32_t request = 0;
  RowRange rows;          // rows of the head's K and V tensors (in the rank's shard)
  std::uint64_t pos0 = 0;  // the key position of its first row in the request
};

struct BatchRequest {
  std::uint64_t len = 0;
  std::vector<std::uint32_t> ranks;  // the ranks holding its pages, ascending; the first stores O
  // Reduced as decode reduces, over every rank of the group (those without its pages
  // with an empty state): when it is on every rank, the batch's only request, or every
  // request under --reduce two-level.
  bool whole_group = false;
};

// DecodeParams::groups: per KV head q and o [B * G * T_q, d] (request-major), k and v
// [ranks * rank_rows, d] sharded 2-D over the group (rank r's pages in its channel).
struct DecodeBatchParams : DecodeParams {
  std::vector<std::vector<BatchPiece>> pieces;  // per rank, in order; the same for every head
  std::vector<BatchRequest> requests;
};

// Message tags of request q's reduce: kTagBatch + 2q (and + 1 for Level 1 when it spans
// the whole group).
inline constexpr std::uint32_t kTagBatch = 0x10000;

void gqa_decode_batch(tl::Ctx& tl, std::shared_ptr<const DecodeBatchParams> params);

}  // namespace kb::gqa
