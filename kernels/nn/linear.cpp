#include "kernels/nn/linear.h"

#include <algorithm>

namespace kb::nn {

namespace {

// Staged tiles in flight: enough that a tile's HBM latency hides behind the others'
// transfers, whatever the width of the PE's slice.
constexpr std::uint32_t kStages = 4;

}  // namespace

tl::Tensor linear(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w_t, const tl::Tensor* bias,
                  std::uint32_t tile_rows) {
  tl::CompositeOpts opts;
  opts.tile_rows = tile_rows ? tile_rows : stream_tile_rows(tl, w_t);
  const tl::Tensor stage = tl.empty({static_cast<std::int64_t>(kStages) * opts.tile_rows, w_t.cols()}, w_t.dtype(), "stage");
  opts.stage = &stage;
  const tl::Tensor y = tl.composite(x, w_t, opts);
  return bias ? tl.add(y, *bias, &y) : y;
}

std::uint32_t stream_tile_rows(const tl::Ctx& tl, const tl::Tensor& w) {
  const std::uint64_t row_bytes = std::uint64_t{w.cols()} * dtype_bytes(w.dtype());
  const std::uint64_t fit = tl.tcm_capacity() / 4 / (kStages * row_bytes);
  return static_cast<std::uint32_t>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(512, fit)));
}

}  // namespace kb::nn
