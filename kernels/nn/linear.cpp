#include "kernels/nn/linear.h"

namespace kb::nn {

tl::Tensor linear(tl::Ctx& tl, const tl::Tensor& x, const tl::Tensor& w, const tl::Tensor* bias,
                  std::uint32_t tile_rows) {
  tl::CompositeOpts opts;
  opts.trans_b = true;
  opts.tile_rows = tile_rows;
  const tl::Tensor y = tl.composite(x, w, opts);
  return bias ? tl.add(y, *bias, &y) : y;
}

}  // namespace kb::nn
