#pragma once
// The KV-cache append of a step: the new K (or V) rows of one KV head, after RoPE, written
// into the paged cache that the batched decode reads (kernels/gqa/gqa_decode_batch.h),
// at the rows its page table gives the tokens' positions (the host works them out).
#include <cstdint>
#include <vector>

#include "kernels/tl/ctx.h"

namespace kb::nn {

// x [T, d] (a head's columns of the projections: a view may be strided) into `rows` of
// `cache` (one per token), converted to the cache's dtype; runs of consecutive rows in
// one shard go as one store.
void kv_append(tl::Ctx& tl, const tl::Tensor& x, const DeviceTensor& cache, const std::vector<std::uint64_t>& rows);

}  // namespace kb::nn
