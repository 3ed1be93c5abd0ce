#pragma once
// A linear layer y = x W^T (+ b), W^T held as [in, out]: the transpose of nn.Linear's
// [out, in] weight, which the host lays out once as it places the weights. A PE holds the
// columns of W^T it computes (its slice of the outputs) in its HBM channel and streams them
// through the GEMM engine (composite, W^T as a `ref`) in tiles of input rows, accumulating:
// each tile's GEMM covers all the PE's outputs at once, so a GEMV at one token is bound by
// the weights' bytes, not by the GEMM array's columns a tile of a few outputs would leave idle.
#include <cstdint>

#include "kernels/tl/ctx.h"

namespace kb::nn {

// A linear's first weight tiles, loaded ahead into its staging while something that does
// not use the DMA runs (a collective in the TCM): the stream it would wait for at its
// start is under way.
struct Preloaded {
  tl::Tensor stage;
  std::uint32_t rows = 0, tile_rows = 0;
  std::uint32_t stage_rows = 0;  // the rows, and room for the stream of the rest
};

// How about `bytes` of w_t's first rows preload: whole tiles, at most all of them.
Preloaded plan_preload(const tl::Ctx& tl, const tl::Tensor& w_t, std::uint64_t bytes);
// Plans it and loads them into a new staging buffer, in the calling scope (none if no
// whole tile fits in `bytes`).
Preloaded preload(tl::Ctx& tl, const tl::Tensor& w_t, std::uint64_t bytes);
// Loads `p`'s rows of w_t (weights shaped as the ones p was planned for) into p's stage.
void preload_into(tl::Ctx& tl, const tl::Tensor& w_t, const Preloaded& p);

// x [T, in] in TCM; w_t: a ref of rows [in, out]; bias [1, out] or none; `tile_rows` of
// W^T per streamed tile (0: stream_tile_rows); `pre`: w_t's first rows, preloaded.
// Returns [T, out], fp32.
tl::Tensor linear(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w_t, const tl::Tensor* bias = nullptr,
                  std::uint32_t tile_rows = 0, const Preloaded* pre = nullptr);
// Rows of a streamed ref `w` per tile: about 16 KiB, at least twice the rows at which a
// tile's GEMM keeps up with its bytes from HBM, at most 512 and few enough that the four
// staging tiles take at most an eighth of the TCM (two streams may run at once, the up and
// gate projections, beside the activations).
std::uint32_t stream_tile_rows(const tl::Ctx& tl, const tl::Tensor& w);
std::uint32_t stream_tile_rows(const Topology& topo, std::uint32_t cols, DType dtype);
// The TCM a stream of weights `cols` wide takes for its staging tiles.
std::uint64_t stream_stage_bytes(const Topology& topo, std::uint32_t cols, DType dtype);

}  // namespace kb::nn
