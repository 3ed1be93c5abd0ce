#pragma once
// A linear layer y = x W^T (+ b), W in nn.Linear's [out, in] layout: each row of W is an
// output feature. A PE holds the rows of W it computes (its slice of the outputs) in its
// HBM channel and streams them through the GEMM engine (composite, W as a `ref`): a
// weight-streaming GEMV at one token, a GEMM at many.
#include <cstdint>

#include "kernels/tl/ctx.h"

namespace kb::nn {

// x [T, in] in TCM; w: a ref of rows [out, in]; bias [1, out] or none; `tile_rows` of W
// per streamed tile. Returns [T, out], fp32.
tl::Tensor linear(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w, const tl::Tensor* bias = nullptr,
                  std::uint32_t tile_rows = 128);

}  // namespace kb::nn
