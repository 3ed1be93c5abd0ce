#pragma once
// GQA prefill with ring attention (docs/gqa_prefill.md). A group of C cubes x P PEs holds
// one KV head (R groups, on different SIPs, hold replicas of it when there are fewer KV
// heads than groups). K and V keep decode's contiguous C x P placement, so cube i starts
// with KV block i (its P PEs' shards). The blocks rotate around a ring (a Hamiltonian
// cycle of the group, every hop one mesh hop), each crossing each link once: PE p of a
// cube carries slice p of every chunk to PE p of the next cube (C - 1 times) and shares
// it with the other PEs of its cube, receiving the other slices from them into buffers
// posted ahead. The query positions are split over the head's R x C x P ranks
// (contiguous or zigzag), and the G query heads are folded into each tile's rows
// (PrefillPlan), so any G keeps every PE busy. A tile's (m, l, O) state streams between
// HBM and TCM, so TCM use is bounded for any S. Pairs (tile, KV chunk) wholly in the
// future are skipped; diagonal ones are masked. With fewer positions than ranks the PEs
// of a cube split the KV chunks instead and merge their states at the end. No (m, l, O)
// crosses cubes. That is pass-KV; with pass-Q (PrefillShape::ring) the query tiles and
// their state travel instead (prefill_ring_q.h).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/gqa/helpers.h"
#include "kernels/gqa/prefill_plan.h"
#include "kernels/tl/ctx.h"

namespace kb::gqa {

// A group holding a KV head (or one of its replicas).
struct PrefillGroup {
  std::uint32_t cube_start = 0, replica = 0;
  DeviceTensor k, v;   // [S, d], shard2d(C, P)
  DeviceTensor q, o;   // [C * P * stride, d], shard2d(C, P): each rank's tiles' rows in plan order
  DeviceTensor state;  // [C * P * stride, d + 2] fp32: each PE's tiles' (m, l, O)
};

struct PrefillParams : AttentionParams {
  std::shared_ptr<const PrefillPlan> plan;
  std::vector<PrefillGroup> groups;
};

// Message tags: a chunk's K travels the ring with kTagRingK, its V with kTagRingV, and
// they are shared in a cube with kTagShareK and kTagShareV; pass-Q moves a query tile
// with kTagRingQ and its state with kTagRingState.
inline constexpr std::uint32_t kTagRingK = 0x300, kTagRingV = 0x301, kTagShareK = 0x302, kTagShareV = 0x303,
                               kTagRingQ = 0x304, kTagRingState = 0x305, kTagPrefillMerge = 0x310;

void gqa_prefill(tl::Ctx& tl, std::shared_ptr<const PrefillParams> params);

}  // namespace kb::gqa
