#pragma once
// Small kernels that exercise the tl model end to end on every PE of a device:
// a tiled GEMM and a row softmax. Each PE works on the rows of its own shard.
#include <cstdint>

#include "kernels/tl/ctx.h"

namespace kb::kernels {

// C = A x B. A and C are sharded by rows over the group; B [K, N] is replicated on every
// PE and streamed from HBM by composite in tiles of `k_tile` rows while the GEMM works.
// A row tile of `m_tile` rows is loaded ahead of the one being multiplied.
void tiled_gemm(tl::Ctx& tl, DeviceTensor a, DeviceTensor b, DeviceTensor c, std::uint32_t m_tile,
                std::uint32_t k_tile);

// Y = softmax(X) along each row; X and Y sharded by rows. The next tile is loaded
// while the current one is on the vector unit.
void row_softmax(tl::Ctx& tl, DeviceTensor x, DeviceTensor y, std::uint32_t m_tile);

}  // namespace kb::kernels
