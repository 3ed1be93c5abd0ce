#include "kernels/layer/prefill_lanes.h"

namespace kb::layer::prefill {

std::vector<RowRange> blocks(const std::vector<TokenRun>& runs, std::uint32_t block_rows) {
  std::vector<RowRange> out;
  for (const TokenRun& r : runs) {
    if (!out.empty() && out.back().count + r.count <= block_rows)
      out.back().count += r.count;
    else
      out.push_back({r.row, r.count});
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
  for (std::uint32_t k = 0; k < f.chunks; ++k) {
    const tl::Tensor ak = tl.rows(in[k % 2], 0, n);
    tl.load(a, chunk_rows(tl, f, a, k, rows.begin, n), &ak);
    tl.composite(ak, slice(k), stream.opts(out, k > 0));
  }
}

}  // namespace kb::layer::prefill
