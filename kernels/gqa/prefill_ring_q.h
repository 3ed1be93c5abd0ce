#pragma once
// Pass-Q prefill (docs/gqa_prefill.md, The pass-Q ring): the query tiles and their
// (m, l, O) state travel a ring through every PE of the group, K and V stay in place.
#include <vector>

#include "kernels/gqa/gqa_prefill.h"

namespace kb::gqa {

// Where a PE's cube sits: its group's geometry, the cube ring and the cube's place on it.
struct RingSeat {
  GroupGeometry geo;
  std::vector<std::uint32_t> ring;  // group-local cube indices in ring order
  std::uint32_t pos = 0, cube_index = 0;
};

void prefill_ring_q(tl::Ctx& tl, const PrefillParams& p, const PrefillGroup& g, const RingSeat& seat);

}  // namespace kb::gqa
