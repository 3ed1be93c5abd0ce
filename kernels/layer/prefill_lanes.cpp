#include "kernels/layer/prefill_lanes.h"

#include <algorithm>

namespace kb::layer::prefill {

std::vector<RowRange> row_blocks(std::uint64_t rows, std::uint32_t most, std::uint32_t unit) {
  const std::uint64_t n = (rows + most - 1) / most, groups = (rows + unit - 1) / unit;
  std::vector<RowRange> out;
  std::uint64_t begin = 0;
  for (std::uint64_t i = 0; i < n; ++i) {
    const std::uint64_t count =
        std::min((groups / n + (i < groups % n ? 1 : 0)) * unit, rows - begin);
    out.push_back({begin, count});
    begin += count;
  }
  return out;
}

void column_parallel(tl::Ctx& tl, const Here& h, const PrefillForm& f, const DeviceTensor& a,
                     RowRange rows, const DeviceTensor& w, const tl::Tensor& out,
                     const std::array<tl::Tensor, 2>& in, std::uint32_t part) {
  const std::uint32_t n = u32(rows.count), c = f.chunk_cols();
  auto slice = [&](std::uint32_t k) {
    return tl.ref(w, {h.shard_of(w, k).begin + std::uint64_t{part} * c, c});
  };
  const Stream stream(tl, slice(0));
  for (std::uint32_t i = 0; i < f.chunks; ++i) {
    const std::uint32_t k = h.sibling(i);
    const tl::Tensor ak = tl.rows(in[i % 2], 0, n);
    tl.load(a, chunk_rows(tl, f, a, k, rows.begin, n), &ak);
    tl.composite(ak, slice(k), stream.opts(out, i > 0));
  }
}

}  // namespace kb::layer::prefill
