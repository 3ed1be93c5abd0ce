#pragma once
// The 2-level reduce of a decode state to the group's root cube (docs/gqa_decode.md,
// Reduce to root), shared by decode and batched decode.
#include <cstdint>
#include <vector>

#include "kernels/gqa/gqa_decode.h"
#include "kernels/gqa/helpers.h"

namespace kb::gqa {

struct ReduceTags {
  std::uint32_t level2, level1;
};

// Rows of a state that this PE stores as rows of O, and what the store uses, made ahead:
// the O and l columns of those rows and the buffer O / l goes into, in the storage dtype.
struct StoredRows {
  RowRange rows;
  tl::Tensor o, l, out;
  static StoredRows of(tl::Ctx& tl, const tl::Tensor& state, RowRange rows, DType dtype);
};

// Reduces this PE's state [m, d + 2] with those of every PE of the group, scattered by
// rows: part j of the rows is merged over the cube at PE j by recursive halving (Level 2,
// IPCQ), then over the cubes on the center-root tree, in segments (Level 1, NOC). Issues
// the whole reduce, waiting only where a merge waits for its message. Returns the
// segments of rows this PE holds reduced over the group (an owner on the root cube), in
// order, ready to store (their views made while the messages were on their way); none
// on any other PE.
std::vector<StoredRows> reduce_to_root(tl::Ctx& tl, const DecodeParams& p, const GroupGeometry& geo,
                                       std::uint32_t cube_index, const tl::Tensor& state, ReduceTags tags);

// Rows of a state reduced over the group: divided by l into the storage dtype and stored
// as rows first + rows.begin of O.
void store_state(tl::Ctx& tl, const StoredRows& s, const DeviceTensor& o, std::uint64_t first);

}  // namespace kb::gqa
