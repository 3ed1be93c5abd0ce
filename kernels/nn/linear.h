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

// x [T, in] in TCM; w_t: a ref of rows [in, out]; bias [1, out] or none; `tile_rows` of
// W^T per streamed tile (0: stream_tile_rows). Returns [T, out], fp32.
tl::Tensor linear(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w_t, const tl::Tensor* bias = nullptr,
                  std::uint32_t tile_rows = 0);
// Rows of a streamed ref `w` per tile: about 16 KiB, at least twice the rows at which a
// tile's GEMM keeps up with its bytes from HBM, at most 512 and few enough that the four
// staging tiles take at most an eighth of the TCM (two streams may run at once, the up and
// gate projections, beside the activations).
std::uint32_t stream_tile_rows(const tl::Ctx& tl, const tl::Tensor& w);

}  // namespace kb::nn
